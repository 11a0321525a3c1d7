// A wasi:http 0.2 proxy on StarlingMonkey (componentize-js, fetch-event):
//   GET  /headers   the request's method, URL and headers as JSON, status 201
//   POST /echo      the request body streamed back (ReadableStream in, out)
//   GET  /status/N  an empty response with status N
//   GET  /throw     the handler throws
//   anything else   "hello from js at PATH?QUERY"
addEventListener("fetch", (event) => {
  event.respondWith(handle(event.request));
});

async function handle(request) {
  const url = new URL(request.url);
  if (url.pathname === "/echo") {
    return new Response(request.body, {
      headers: { "content-type": "application/octet-stream", "x-echo": "1" },
    });
  }
  if (url.pathname === "/headers") {
    const names = [];
    for (const [name, value] of request.headers) {
      names.push([name, value]);
    }
    names.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const text = JSON.stringify({ method: request.method, path: url.pathname + url.search, headers: names });
    return new Response(text + "\n", {
      status: 201,
      headers: { "content-type": "application/json", "x-multi": "one" },
    });
  }
  if (url.pathname.startsWith("/status/")) {
    return new Response(null, { status: Number(url.pathname.slice(8)) });
  }
  if (url.pathname === "/throw") {
    throw new Error("thrown on request");
  }
  return new Response("hello from js at " + url.pathname + url.search + "\n", {
    headers: { "content-type": "text/plain" },
  });
}
