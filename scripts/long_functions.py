#!/usr/bin/env python3
"""scripts/long_functions.py — list the C functions in src/ longer than N lines (default 80).

A function is counted from the line of its name to its closing brace in column 0 (the tree's
style: the opening brace of a function alone in column 0). Prints "file:line  lines  name" per
long function, then a summary line with the files over --file-max lines (default 800).
Exit status 0 always unless --strict, then 1 when anything is over a limit (for a lint step).

usage: scripts/long_functions.py [--max N] [--file-max M] [--strict] [paths...]
"""
import argparse
import os
import re
import sys

NAME = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(')


def functions(path):
    """Yields (start line, length, name) for each function definition in a C file."""
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = f.read().split('\n')
    for i, line in enumerate(lines):
        if line != '{':
            continue
        # The signature: the lines above back to one that starts in column 0 with a name.
        j = i - 1
        while j > 0 and (lines[j].startswith((' ', '\t')) or lines[j] == ''):
            j -= 1
        sig = ' '.join(lines[j:i])
        if '=' in sig.split('(')[0] or sig.startswith(('struct ', 'enum ', 'union ')) and '(' not in sig:
            continue  # an initialised table, not a function
        names = NAME.findall(sig)
        if not names:
            continue
        name = names[0]
        k = i + 1
        while k < len(lines) and lines[k] != '}':
            k += 1
        # The name's own line: the signature usually puts the type on the line above.
        start = j
        for n in range(j, i):
            if re.search(r'\b' + re.escape(name) + r'\s*\(', lines[n]):
                start = n
                break
        yield start + 1, k - start + 1, name


def sources(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, _, files in os.walk(p):
            for fn in sorted(files):
                if fn.endswith('.c'):
                    yield os.path.join(root, fn)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--max', type=int, default=80)
    ap.add_argument('--file-max', type=int, default=800)
    ap.add_argument('--strict', action='store_true')
    ap.add_argument('paths', nargs='*', default=['src'])
    a = ap.parse_args()
    long_fns = 0
    long_files = []
    for path in sorted(sources(a.paths)):
        with open(path, encoding='utf-8', errors='replace') as f:
            n = sum(1 for _ in f)
        if n > a.file_max:
            long_files.append((path, n))
        for line, length, name in functions(path):
            if length > a.max:
                long_fns += 1
                print(f'{path}:{line}  {length:4d}  {name}')
    for path, n in long_files:
        print(f'{path}: {n} lines (over {a.file_max})')
    print(f'long_functions: {long_fns} function(s) over {a.max} lines, '
          f'{len(long_files)} file(s) over {a.file_max} lines')
    return 1 if a.strict and (long_fns or long_files) else 0


if __name__ == '__main__':
    sys.exit(main())
