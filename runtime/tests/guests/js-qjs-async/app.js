// The pipes interface in JavaScript: stream<u8> both ways and future<string> both ways.

async function greet(name) {
  await Promise.resolve();
  return `hello, ${name}`;
}

async function countBytes(data) {
  let total = 0;
  for await (const chunk of data) {
    total += chunk.length;
  }
  return total;
}

async function generate(n) {
  return (async function* () {
    const chunkSize = 4096;
    for (let sent = 0; sent < n; sent += chunkSize) {
      const size = Math.min(chunkSize, n - sent);
      const chunk = new Uint8Array(size);
      for (let i = 0; i < size; i++) {
        chunk[i] = (sent + i) % 256;
      }
      yield chunk;
    }
  })();
}

async function upperStream(data) {
  return (async function* () {
    for await (const chunk of data) {
      const out = new Uint8Array(chunk.length);
      for (let i = 0; i < chunk.length; i++) {
        const c = chunk[i];
        out[i] = c >= 97 && c <= 122 ? c - 32 : c;
      }
      yield out;
    }
  })();
}

async function later(msg) {
  const { readable, writable } = wit.Future(wit.Future.STRING);
  writable.write(`later: ${msg}`);
  return readable;
}

async function awaitReversed(f) {
  const value = await f.read();
  return Array.from(value).reverse().join("");
}

export const pipes = { greet, countBytes, generate, upperStream, later, awaitReversed };
