'use strict';
// transform.js — turns one cell of JavaScript or TypeScript into code a persistent vm
// context can run with browser-console semantics.
//
// Guarantees:
// - Every top-level binding (var, let, const, function, class, import) becomes a property
//   of the context's global object, so later cells see it and may declare it again
//   (the new value wins). `var` declared in nested blocks (outside functions) does too.
// - Line numbers of the user's cell are kept (sucrase keeps lines when it strips types;
//   the rewrite never adds or removes a line break), so V8's line numbers are the user's.
// - The cell becomes two scripts: `prelude` (function declarations, kept at their
//   positions with everything else blanked, `var` for every binding, and the `import()`
//   calls of static imports) and `body` (everything else), plus the list of import
//   bindings to assign between the two (imports are evaluated and bound before the body
//   runs, as ESM hoists them). When the cell uses top-level await the body is wrapped in an async arrow whose
//   last expression statement is returned; otherwise the body is a plain script whose
//   completion value is the result, so a synchronous cell runs entirely inside
//   runInContext (where SIGINT can stop it).
// - Syntax errors throw a SyntaxError whose `loc` is {line, column} in the user's cell.
// Assumes: input is a string; it may be hostile but only ever runs as the user's own code.

const ASYNC_PREFIX = '(async () => {';

let acorn = null;
let sucrase = null;

// Loads the parsers ahead of the first cell (called when the kernel is idle).
function warmUp(language) {
  acorn ??= require('acorn');
  if (language === 'typescript') sucrase ??= require('sucrase');
}

// Strips TypeScript syntax; the line structure of the output matches the input.
function stripTypes(code) {
  sucrase ??= require('sucrase');
  try {
    return sucrase.transform(code, {
      transforms: ['typescript'],
      disableESTransforms: true,
      keepUnusedImports: true, // a later cell may use what this one imports
    }).code;
  } catch (err) {
    throw toSyntaxError(err);
  }
}

function toSyntaxError(err) {
  if (err.name === 'SyntaxError' && err.loc) return err;
  const out = new SyntaxError(String(err.message).replace(/ \(\d+:\d+\)$/, ''));
  if (err.loc) out.loc = { line: err.loc.line, column: err.loc.column };
  return out;
}

function parse(code) {
  acorn ??= require('acorn');
  const options = {
    ecmaVersion: 'latest',
    sourceType: 'script',
    allowAwaitOutsideFunction: true,
    allowImportExportEverywhere: true,
    allowHashBang: true,
  };
  // `{a: 1}` alone is an object to a console user, not a block with a label (as in
  // Node's REPL): try it in parentheses first.
  if (/^\s*\{/.test(code) && /\}\s*$/.test(code)) {
    try {
      const ast = acorn.parse(`(${code})`, options);
      if (ast.body.length === 1) return { reparen: true, ast };
    } catch { /* a block after all */ }
  }
  try {
    return { reparen: false, ast: acorn.parse(code, options) };
  } catch (err) {
    throw toSyntaxError(err);
  }
}

// Collects the identifiers bound by a declaration pattern.
function patternNames(node, out) {
  switch (node.type) {
    case 'Identifier': out.push(node.name); break;
    case 'ObjectPattern':
      for (const p of node.properties) patternNames(p.type === 'RestElement' ? p.argument : p.value, out);
      break;
    case 'ArrayPattern': for (const e of node.elements) if (e) patternNames(e, out); break;
    case 'RestElement': patternNames(node.argument, out); break;
    case 'AssignmentPattern': patternNames(node.left, out); break;
  }
  return out;
}

// Replaces [start, end) of the source with text, keeping the line breaks it covered.
class Edits {
  constructor(source) { this.source = source; this.list = []; }
  replace(start, end, text) { this.list.push({ start, end, text }); }
  insert(at, text) { this.list.push({ start: at, end: at, text }); }
  blank(start, end) { this.replace(start, end, ''); }
  apply() {
    const { source } = this;
    this.list.sort((a, b) => a.start - b.start || a.end - b.end);
    let out = '';
    let pos = 0;
    for (const e of this.list) {
      out += source.slice(pos, e.start) + e.text + keepLines(source.slice(e.start, e.end), e.text.length);
      pos = e.end;
    }
    return out + source.slice(pos);
  }
}

// What is left of a replaced region: its line breaks, and spaces so that the code after
// the region keeps its column when the replacement is shorter.
function keepLines(region, used) {
  const breaks = region.match(/\r\n|[\n\r\u2028\u2029]/g);
  if (!breaks) return ' '.repeat(Math.max(0, region.length - used));
  const lastLine = region.length - Math.max(...['\n', '\r', '\u2028', '\u2029'].map((c) => region.lastIndexOf(c))) - 1;
  return breaks.join('') + ' '.repeat(lastLine);
}

// Rewrites `var/let/const a = 1, {b} = o` into `void (a = 1, {b} = o)`.
function rewriteDeclaration(decl, edits, names, inForHead) {
  for (const d of decl.declarations) patternNames(d.id, names);
  const kw = decl.kind.length;
  if (inForHead) { edits.blank(decl.start, decl.start + kw); return; }
  const withInit = decl.declarations.filter((d) => d.init || decl.kind !== 'var');
  if (withInit.length === 0) { edits.blank(decl.start, decl.end); return; }
  edits.replace(decl.start, decl.start + kw, 'void (');
  for (const d of decl.declarations) if (!d.init && decl.kind !== 'var') edits.insert(d.id.end, ' = void 0');
  edits.insert(decl.declarations[decl.declarations.length - 1].end, ')');
}

// The bindings of one import declaration: {local, index, imported} where imported is
// '*' (the namespace), 'default' or an export name.
function importBindings(node, index) {
  return node.specifiers.map((s) => {
    if (s.type === 'ImportNamespaceSpecifier') return { local: s.local.name, index, imported: '*' };
    if (s.type === 'ImportDefaultSpecifier') return { local: s.local.name, index, imported: 'default' };
    return { local: s.local.name, index, imported: s.imported.type === 'Identifier' ? s.imported.name : s.imported.value };
  });
}

// Walks statements and expressions outside functions: finds top-level await and
// rewrites nested `var` declarations so they land on the global object too.
function walkOutsideFunctions(node, state, edits, names, parent) {
  if (!node || typeof node.type !== 'string') return;
  switch (node.type) {
    case 'FunctionDeclaration': case 'FunctionExpression': case 'ArrowFunctionExpression':
    case 'ClassDeclaration': case 'ClassExpression':
      // Class bodies cannot await at this level; their methods are functions.
      if (node.type.startsWith('Class')) walkOutsideFunctions(node.superClass, state, edits, names, node);
      return;
    case 'AwaitExpression': state.usesAwait = true; break;
    case 'ForOfStatement': if (node.await) state.usesAwait = true; break;
    case 'VariableDeclaration':
      if (node.kind === 'var') {
        const inForHead = parent && (parent.init === node || parent.left === node);
        rewriteDeclaration(node, edits, names, inForHead);
      }
      break;
  }
  for (const key in node) {
    if (key === 'type' || key === 'start' || key === 'end') continue;
    const v = node[key];
    if (Array.isArray(v)) for (const c of v) walkOutsideFunctions(c, state, edits, names, node);
    else if (v && typeof v === 'object') walkOutsideFunctions(v, state, edits, names, node);
  }
}

// Compiles one cell.
function compileCell(source, language) {
  const code = language === 'typescript' ? stripTypes(source) : source;
  const { reparen, ast: program } = parse(code);
  const text = reparen ? `(${code})` : code;
  let columnOffset = reparen ? -1 : 0;
  const body = new Edits(text);
  const preludeEdits = new Edits(text);
  const names = [];
  const imports = [];
  const bindings = [];
  const functions = [];
  const state = { usesAwait: false };

  const statements = program.body;
  for (const stmt of statements) {
    let node = stmt;
    if (node.type === 'ExportNamedDeclaration' || node.type === 'ExportDefaultDeclaration') {
      if (!node.declaration) { body.blank(node.start, node.end); continue; } // export {a} [from 'm']
      const d = node.declaration;
      body.blank(node.start, d.start);
      if (node.type === 'ExportDefaultDeclaration' && !(/Declaration$/.test(d.type) && d.id)) {
        body.insert(d.start, ';(');
        body.insert(d.end, ')');
        walkOutsideFunctions(d, state, body, names, node);
        continue;
      }
      node = d;
    } else if (node.type === 'ExportAllDeclaration') {
      body.blank(node.start, node.end);
      continue;
    }
    switch (node.type) {
      case 'VariableDeclaration':
        if (node.kind === 'var') break; // walkOutsideFunctions rewrites every var
        rewriteDeclaration(node, body, names, false);
        for (const d of node.declarations) walkOutsideFunctions(d.init, state, body, names, d);
        continue;
      case 'FunctionDeclaration':
        names.push(node.id.name);
        functions.push(node);
        body.blank(node.start, node.end);
        continue;
      case 'ClassDeclaration':
        names.push(node.id.name);
        body.insert(node.start, `void (${node.id.name} = `);
        body.insert(node.end, ')');
        walkOutsideFunctions(node.superClass, state, body, names, node);
        continue;
      case 'ImportDeclaration':
        for (const b of importBindings(node, imports.length)) { bindings.push(b); names.push(b.local); }
        imports.push(node.source.value);
        body.blank(node.start, node.end);
        continue;
    }
    walkOutsideFunctions(node, state, body, names, program);
  }

  // The value is the last expression statement's when only function declarations (which
  // have no completion value) follow it; anything else last ('use strict' too) has none.
  const last = statements.findLast((s) => s.type !== 'FunctionDeclaration' && s.type !== 'EmptyStatement');
  const hasResult = last !== undefined && last.type === 'ExpressionStatement' && last.directive !== 'use strict';

  let bodyText;
  let bodyOffset = columnOffset;
  if (state.usesAwait) {
    if (hasResult) { body.insert(last.expression.start, 'return ('); body.insert(last.expression.end, ');'); }
    bodyText = `${ASYNC_PREFIX}${body.apply()}\n})()`;
    bodyOffset -= ASYNC_PREFIX.length;
  } else {
    bodyText = body.apply();
  }

  let prelude = null;
  if (functions.length || names.length || imports.length) {
    // Keep only the function declarations (and a 'use strict' directive), in place, so V8
    // reports their real lines and modes.
    let pos = statements[0]?.directive === 'use strict' ? statements[0].end : 0;
    for (const f of functions) { preludeEdits.blank(pos, f.start); pos = f.end; }
    preludeEdits.blank(pos, text.length);
    const tail = [];
    if (names.length) tail.push(`var ${[...new Set(names)].join(', ')};`);
    tail.push(`[${imports.map((s) => `import(${JSON.stringify(s)})`).join(', ')}]`);
    prelude = { code: preludeEdits.apply() + tail.join(' '), columnOffset };
  }
  return {
    prelude, // null, or a script whose value is an array of import() promises
    bindings, // how to bind the namespaces those promises give: {local, index, imported}
    body: { code: bodyText, columnOffset: bodyOffset },
    isAsync: state.usesAwait,
    hasResult,
  };
}

module.exports = { compileCell, warmUp };
