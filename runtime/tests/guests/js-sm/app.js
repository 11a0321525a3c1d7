// A WASI 0.2 command on StarlingMonkey: arguments, one environment variable,
// a file read and a file written in the directory preopened as /data, and a
// failing exit when asked to. INPUT names the file to read (input.txt); a
// filesystem error prints its wasi:filesystem error-code and fails. CHUNK
// reads in chunks of that many bytes, printing each length and end flag.
import { getArguments, getEnvironment } from "wasi:cli/environment@0.2.0";
import { getDirectories } from "wasi:filesystem/preopens@0.2.0";

function dataDir() {
  for (const [descriptor, path] of getDirectories()) {
    if (path === "/data") {
      return descriptor;
    }
  }
  return null;
}

function readAll(file, chunkSize, trace) {
  const chunks = [];
  let offset = 0n;
  for (;;) {
    const [bytes, end] = file.read(chunkSize, offset);
    if (trace) {
      console.log("chunk: " + bytes.length + " end=" + end);
    }
    chunks.push(bytes);
    offset += BigInt(bytes.length);
    if (end || bytes.length === 0) {
      break;
    }
  }
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return new TextDecoder().decode(all);
}

function copyUpper(dir, inputName, chunk) {
  const input = dir.openAt({}, inputName, {}, { read: true });
  const text = chunk ? readAll(input, BigInt(chunk), true) : readAll(input, 4096n, false);
  console.log("read: " + text.trimEnd());
  const output = dir.openAt({}, "output.txt", { create: true, truncate: true }, { write: true });
  const upper = new TextEncoder().encode(text.toUpperCase());
  const written = output.write(upper, 0n);
  console.log("wrote: " + written + " bytes");
}

function runCommand() {
  const args = getArguments().slice(1);
  console.log("hello from js-sm");
  console.log("args: " + args.join(" | "));
  const greeting = getEnvironment().find(([name]) => name === "GREETING");
  console.log("env GREETING: " + (greeting ? greeting[1] : "<unset>"));
  const variable = (wanted) => getEnvironment().find(([name]) => name === wanted)?.[1];
  const dir = dataDir();
  if (dir === null) {
    console.log("no /data preopen");
  } else {
    try {
      copyUpper(dir, variable("INPUT") ?? "input.txt", variable("CHUNK"));
    } catch (error) {
      console.error("file error: " + (error.payload ?? error));
      throw error;
    }
  }
  if (args.includes("--fail")) {
    console.error("failing on request");
    throw new Error("--fail given");
  }
}

export const run = { run: runCommand };
