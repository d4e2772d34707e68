// tuple_crosscheck.js — random tuples packed by the npm package fdb-tuple,
// for divan's C tuple codec to compare against (test/tuple/test_tuple.c).
//
//   node test/node/tuple_crosscheck.js SEED COUNT
//
// Prints COUNT lines, one tuple each, deterministic for a SEED:
//
//   T <hex> <desc>           fdb-tuple's pack() of the tuple
//   V <hex> <pos> <desc>     packUnboundVersionstamp(): the bytes and the
//                            offset of the incomplete stamp's 10 bytes
//
// <hex> is "-" for the empty tuple. <desc> is the tuple as space-separated
// tokens, the same little language the C tests use for their vectors:
//
//   n            null              T / F        true / false
//   b:HEX        byte string       s:HEX        unicode string (its UTF-8)
//   i:+HEX       integer >= 0      i:-HEX       integer < 0 (magnitude)
//   f:HEX8       float bits        d:HEX16      double bits (IEEE, big-endian)
//   u:HEX32      UUID              v:HEX24      versionstamp
//   w:HEX4       incomplete versionstamp with this user version
//   ( ... )      nested tuple
//
// Values are generated so the comparison means something despite
// fdb-tuple's mapping of JS types: integers beyond 2^53 are BigInts (a JS
// number there would become a double), doubles given as plain numbers are
// never safe integers (those become integers; -0 becomes a double), and the
// bits in d:/f: are what Buffer.writeDoubleBE / writeFloatBE produce for the
// value, i.e. what fdb-tuple is asked to encode. NaNs with arbitrary
// payloads go through fdb-tuple's rawEncoding field. This script does not
// judge anything; the C test does.
'use strict'
const tuple = require('fdb-tuple')

const seed = Number(process.argv[2] || 1) >>> 0
const count = Number(process.argv[3] || 100)

// xorshift128+ on BigInt-free 32-bit state (sfc32), seeded by splitmix32.
let s0, s1, s2, s3
{
  let x = seed ^ 0x9e3779b9
  const mix = () => {
    x = (x + 0x9e3779b9) | 0
    let z = x
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
    return (z ^ (z >>> 16)) >>> 0
  }
  s0 = mix(); s1 = mix(); s2 = mix(); s3 = mix()
}
function u32 () {
  s0 >>>= 0; s1 >>>= 0; s2 >>>= 0; s3 >>>= 0
  const t = (s0 + s1 | 0) + s3 | 0
  s3 = s3 + 1 | 0
  s0 = s1 ^ (s1 >>> 9)
  s1 = s2 + (s2 << 3) | 0
  s2 = (s2 << 21) | (s2 >>> 11)
  s2 = s2 + t | 0
  return t >>> 0
}
const below = (n) => Math.floor(u32() / 4294967296 * n)
const pick = (arr) => arr[below(arr.length)]
const randBytes = (n) => {
  const b = Buffer.alloc(n)
  for (let i = 0; i < n; i++) b[i] = u32() & 0xff
  return b
}
const hex = (b) => b.toString('hex')

function magHex (big) {
  const h = big.toString(16)
  return h.length % 2 ? '0' + h : h
}
function intTok (big) {
  return big < 0n ? 'i:-' + magHex(-big) : 'i:+' + magHex(big)
}

const specialInts = [
  0n, 1n, -1n, 255n, -255n, 256n, -256n, 65535n, -65535n, 65536n, -65536n,
  2n ** 32n - 1n, -(2n ** 32n - 1n), 2n ** 32n, -(2n ** 32n),
  2n ** 53n - 1n, -(2n ** 53n - 1n), 2n ** 53n, -(2n ** 53n),
  2n ** 63n - 1n, -(2n ** 63n - 1n), 2n ** 63n, -(2n ** 63n), -(2n ** 63n) - 1n,
  2n ** 64n - 2n, -(2n ** 64n - 2n), 2n ** 64n - 1n, -(2n ** 64n - 1n),
  2n ** 64n, -(2n ** 64n), 2n ** 64n + 1n, -(2n ** 64n + 1n),
  2n ** 72n - 1n, -(2n ** 72n - 1n), 2n ** 72n, -(2n ** 72n),
  2n ** 2040n - 1n, -(2n ** 2040n - 1n), 2n ** 2032n, -(2n ** 2032n)
]

function randMagnitude (nbytes) {
  if (nbytes === 0) return 0n
  const b = randBytes(nbytes)
  if (b[0] === 0) b[0] = 1 + below(255)
  return BigInt('0x' + hex(b))
}

function genInt () {
  const r = below(10)
  if (r < 2) {
    const v = pick(specialInts)
    return [v, intTok(v)]
  }
  if (r < 5) { // plain JS number, a safe integer
    const n = below(8)
    let m = Number(randMagnitude(n))
    if (m > Number.MAX_SAFE_INTEGER) m = m % Number.MAX_SAFE_INTEGER
    const v = below(2) ? -m : m
    if (Object.is(v, -0)) return [0, 'i:+00']
    return [v, intTok(BigInt(v))]
  }
  // BigInt, mostly within 8 bytes, sometimes 9..255 bytes
  const n = below(4) ? below(9) : 9 + below(247)
  const m = randMagnitude(n)
  const v = below(2) ? -m : m
  return [v, intTok(v)]
}

function doubleBits (v) {
  const b = Buffer.alloc(8)
  b.writeDoubleBE(v)
  return b
}
function floatBits (v) {
  const b = Buffer.alloc(4)
  b.writeFloatBE(v)
  return b
}

const specialDoubles = [0, -0, 1, -1, 0.5, -0.5, Infinity, -Infinity, NaN,
  Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE,
  2.2250738585072014e-308, 2 ** 53, 2 ** 64, -(2 ** 64), 1e300, Math.PI]

function genDouble () {
  const r = below(10)
  let v
  if (r < 3) v = pick(specialDoubles)
  else if (r < 4) { // a NaN with a random payload and sign, via rawEncoding
    const raw = randBytes(8)
    raw[0] = (raw[0] & 0x80) | 0x7f
    raw[1] |= 0xf0
    if ((raw[1] & 0x0f) === 0 && raw.subarray(2).every((x) => x === 0)) raw[7] = 1
    return [{ type: 'double', value: NaN, rawEncoding: raw }, 'd:' + hex(raw)]
  } else v = randBytes(8).readDoubleBE(0)
  // A plain number when fdb-tuple would encode it as a double anyway.
  const plain = !Number.isSafeInteger(v) || Object.is(v, -0)
  const js = plain && below(2) ? v : { type: 'double', value: v }
  return [js, 'd:' + hex(doubleBits(v))]
}

const specialFloats = [0, -0, 1, -1, 0.5, Infinity, -Infinity, NaN,
  1.401298464324817e-45, -1.401298464324817e-45, 3.4028234663852886e38, -42]

function genFloat () {
  const r = below(10)
  let v
  if (r < 3) v = pick(specialFloats)
  else if (r < 4) {
    const raw = randBytes(4)
    raw[0] = (raw[0] & 0x80) | 0x7f
    raw[1] |= 0x80
    if ((raw[1] & 0x7f) === 0 && raw[2] === 0 && raw[3] === 0) raw[3] = 1
    return [{ type: 'float', value: NaN, rawEncoding: raw }, 'f:' + hex(raw)]
  } else {
    v = randBytes(4).readFloatBE(0)
    if (Number.isNaN(v)) v = 1.5
  }
  return [{ type: 'float', value: v }, 'f:' + hex(floatBits(v))]
}

function randCodePoint () {
  const r = below(10)
  if (r < 4) return below(128) // ASCII, NUL included
  if (r < 5) return 0
  if (r < 7) return 0x80 + below(0x780) // two bytes
  if (r < 9) { // three bytes, no surrogates
    const c = 0x800 + below(0x10000 - 0x800 - 0x800)
    return c >= 0xd800 ? c + 0x800 : c
  }
  return 0x10000 + below(0x100000) // four bytes
}

function genString () {
  const n = below(4) ? below(8) : below(40)
  let s = ''
  for (let i = 0; i < n; i++) s += String.fromCodePoint(randCodePoint())
  return [s, 's:' + hex(Buffer.from(s, 'utf8'))]
}

function genBytes () {
  const n = below(4) ? below(8) : below(40)
  const b = randBytes(n)
  for (let i = 0; i < n; i++) {
    const r = below(6)
    if (r === 0) b[i] = 0
    else if (r === 1) b[i] = 0xff
  }
  return [b, 'b:' + hex(b)]
}

function genItem (depth) {
  switch (below(depth < 3 ? 13 : 12)) {
    case 0: return [null, 'n']
    case 1: return genBytes()
    case 2: return genString()
    case 3: case 4: return genInt()
    case 5: return genDouble()
    case 6: return genFloat()
    case 7: return below(2) ? [true, 'T'] : [false, 'F']
    case 8: {
      const u = randBytes(16)
      return [{ type: 'uuid', value: u }, 'u:' + hex(u)]
    }
    case 9: {
      const v = randBytes(12)
      if (below(8) === 0) v.fill(0xff, 0, 10) // looks incomplete, is not
      return [{ type: 'versionstamp', value: v }, 'v:' + hex(v)]
    }
    case 10: return genInt()
    case 11: return genString()
    default: {
      const n = below(5)
      const arr = []
      const toks = ['(']
      for (let i = 0; i < n; i++) {
        const [v, t] = genItem(depth + 1)
        arr.push(v)
        toks.push(t)
      }
      toks.push(')')
      return [arr, toks.join(' ')]
    }
  }
}

// Put one incomplete versionstamp somewhere in the tuple, maybe nested.
function plantStamp (arr, toks, code) {
  const stamp = tuple.unboundVersionstamp(code)
  const tok = 'w:' + code.toString(16).padStart(4, '0')
  const at = below(arr.length + 1)
  if (below(3) === 0) {
    arr.splice(at, 0, [stamp])
    toks.splice(at, 0, '( ' + tok + ' )')
  } else {
    arr.splice(at, 0, stamp)
    toks.splice(at, 0, tok)
  }
}

const out = []
for (let k = 0; k < count; k++) {
  const n = below(9)
  const arr = []
  const toks = []
  for (let i = 0; i < n; i++) {
    const [v, t] = genItem(0)
    arr.push(v)
    toks.push(t)
  }
  if (below(10) === 0) {
    plantStamp(arr, toks, below(65536))
    const p = tuple.packUnboundVersionstamp(arr)
    out.push('V ' + hex(p.data) + ' ' + p.stampPos + ' ' + toks.join(' '))
  } else {
    const b = tuple.pack(arr)
    out.push('T ' + (b.length ? hex(b) : '-') + ' ' + toks.join(' '))
  }
}
out.push('')
process.stdout.write(out.join('\n'))
