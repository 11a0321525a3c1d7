// A WASI 0.2 command in JavaScript: prints its arguments and one variable.
import environment from "wasi:cli/environment@0.2.0";
import stdout from "wasi:cli/stdout@0.2.0";

function encodeUtf8(text) {
  const bytes = [];
  for (const ch of text) {
    let c = ch.codePointAt(0);
    if (c < 0x80) {
      bytes.push(c);
    } else if (c < 0x800) {
      bytes.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    } else {
      bytes.push(
        0xf0 | (c >> 18),
        0x80 | ((c >> 12) & 0x3f),
        0x80 | ((c >> 6) & 0x3f),
        0x80 | (c & 0x3f),
      );
    }
  }
  return new Uint8Array(bytes);
}

function runCommand() {
  const out = stdout.getStdout();
  const say = (line) => out.blockingWriteAndFlush(encodeUtf8(line + "\n"));
  say("hello from js-wasi-cli");
  say("args: " + environment.getArguments().slice(1).join(" | "));
  const greeting = environment.getEnvironment().find(([name]) => name === "GREETING");
  say("env GREETING: " + (greeting ? greeting[1] : "<unset>"));
}

export const run = { run: runCommand };
