// Synchronous exports of the js-qjs world.

export function greet(name) {
  return `hello, ${name}`;
}

export function addPoints(a, b) {
  return { x: a.x + b.x, y: a.y + b.y };
}

export function sum(xs) {
  return xs.reduce((acc, x) => (acc + x) >>> 0, 0);
}

export function reverseBytes(b) {
  return Uint8Array.from(b).reverse();
}

export function parseU32(s) {
  if (!/^[0-9]+$/.test(s)) {
    throw `not a number: ${s}`;
  }
  const value = Number(s);
  if (value > 0xffffffff) {
    throw `out of range: ${s}`;
  }
  return value;
}

export function maybeLen(s) {
  return s === null ? null : s.length;
}
