'use strict';
// display.js — turns values into the API's Result objects (text, html, png, json, …).
//
// Guarantees:
// - `text` is `util.inspect` of the value ('abc' keeps its quotes) unless a _repr_*_
//   method supplies text/plain; a MIME bundle has text only if it holds text/plain.
// - `json` is set for plain objects and arrays (from any realm) that JSON can represent;
//   it is a fresh copy, so the value can be serialized into a channel message safely.
// - A MIME bundle is a plain object whose keys all look like `type/subtype`
//   (`{'text/html': '<b>hi</b>'}`); known types go to their Result field, others to `extra`.
// - Binary payloads (png, jpeg, pdf) given as Buffer/Uint8Array/ArrayBuffer become base64;
//   strings are passed through as base64 already. A bare Buffer/Uint8Array holding a PNG
//   or JPEG is shown as that image.
// - Objects may describe themselves with `_repr_html_()`, `_repr_markdown_()`,
//   `_repr_svg_()`, `_repr_png_()`, `_repr_jpeg_()`, `_repr_pdf_()`, `_repr_latex_()`,
//   `_repr_json_()`, `_repr_javascript_()` or `_repr_mimebundle_()` (as in IPython).
// Assumes: values come from user code; getters and _repr_ methods may throw, and then the
// exception propagates to the caller (display() raises in the user's cell).

const util = require('util');

const FIELDS = {
  'text/plain': 'text',
  'text/html': 'html',
  'text/markdown': 'markdown',
  'image/svg+xml': 'svg',
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'application/pdf': 'pdf',
  'text/latex': 'latex',
  'application/json': 'json',
  'application/javascript': 'javascript',
  'text/javascript': 'javascript',
};
const BINARY = new Set(['png', 'jpeg', 'pdf']);
const REPRS = {
  _repr_html_: 'text/html',
  _repr_markdown_: 'text/markdown',
  _repr_svg_: 'image/svg+xml',
  _repr_png_: 'image/png',
  _repr_jpeg_: 'image/jpeg',
  _repr_pdf_: 'application/pdf',
  _repr_latex_: 'text/latex',
  _repr_json_: 'application/json',
  _repr_javascript_: 'application/javascript',
};
const MIME_KEY = /^[a-z]+\/[-+.\w]+$/i;

function isPlainObject(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  // Object.prototype of another realm (the vm context) has no prototype either.
  return proto === null || Object.getPrototypeOf(proto) === null;
}

function isBytes(v) {
  return util.types.isUint8Array(v) || util.types.isArrayBuffer(v);
}

function toBase64(v) {
  if (typeof v === 'string') return v;
  if (util.types.isArrayBuffer(v)) return Buffer.from(v).toString('base64');
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

function isMimeBundle(v) {
  if (!isPlainObject(v)) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && keys.every((k) => MIME_KEY.test(k));
}

function jsonCopy(v) {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? undefined : JSON.parse(s);
  } catch {
    return undefined; // cycles, BigInt: text only
  }
}

function imageType(bytes) {
  const b = util.types.isArrayBuffer(bytes) ? new Uint8Array(bytes) : bytes;
  if (b.length >= 4 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  return null;
}

// Adds one MIME entry to a Result.
function put(result, mime, data) {
  if (data === undefined || data === null) return;
  const field = FIELDS[mime.toLowerCase()];
  if (!field) {
    result.extra ??= {};
    result.extra[mime] = isBytes(data) ? toBase64(data) : data;
  } else if (BINARY.has(field)) {
    result[field] = toBase64(data);
  } else if (field === 'json') {
    const copy = jsonCopy(data);
    if (copy !== undefined) result.json = copy;
  } else {
    result[field] = typeof data === 'string' ? data : String(data);
  }
}

function inspect(value) {
  return util.inspect(value, { depth: 4, maxArrayLength: 200, maxStringLength: 100000, breakLength: 100 });
}

// Builds the Result for one value. isMainResult marks the cell's final expression.
function toResult(value, isMainResult) {
  const result = {};
  if (isMimeBundle(value)) {
    for (const [mime, data] of Object.entries(value)) put(result, mime, data);
  } else {
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
      if (typeof value._repr_mimebundle_ === 'function') {
        const bundle = value._repr_mimebundle_();
        if (bundle && typeof bundle === 'object') for (const [mime, data] of Object.entries(bundle)) put(result, mime, data);
      }
      for (const [method, mime] of Object.entries(REPRS)) {
        if (typeof value[method] === 'function') put(result, mime, value[method]());
      }
      if (isBytes(value)) {
        const image = imageType(value);
        if (image) put(result, image, value);
      }
    }
    if (result.json === undefined && (Array.isArray(value) || isPlainObject(value))) {
      const copy = jsonCopy(value);
      if (copy !== undefined) result.json = copy;
    }
    if (result.text === undefined) result.text = inspect(value);
  }
  if (isMainResult) result.isMainResult = true;
  return result;
}

// Returns the `display` global: display(value) emits one result; display.html(s) etc.
// emit one result of that type. emit(result) is called synchronously, in call order.
function makeDisplay(emit) {
  const display = (value) => { emit(toResult(value, false)); };
  const shortcut = (mime) => (data) => {
    const result = {};
    put(result, mime, data);
    emit(result);
  };
  display.html = shortcut('text/html');
  display.markdown = shortcut('text/markdown');
  display.svg = shortcut('image/svg+xml');
  display.png = shortcut('image/png');
  display.jpeg = shortcut('image/jpeg');
  display.pdf = shortcut('application/pdf');
  display.latex = shortcut('text/latex');
  display.json = shortcut('application/json');
  display.javascript = shortcut('application/javascript');
  display.text = shortcut('text/plain');
  return display;
}

module.exports = { toResult, makeDisplay };
