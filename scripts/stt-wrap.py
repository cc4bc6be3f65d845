#!/usr/bin/env python3
"""Rewrites calls through a transport ops table into the stt_* wrappers of transport.h.

For code written before the wrappers (a branch merged later): `make lint` names every call
through an ops table outside transport/; this rewrites them in place.

    EXPR->probe|init|fini|devices|get_props|listen|connect(args) -> stt_<op>(EXPR, args)
    EXPR->accept|reg_mr|...|test|close_*|poll_fds(x, rest)     -> stt_<op>(x, rest)
        (the wrapper dispatches through x's own ops, the same table; a call whose first
        argument is NULL, 0 or a cast is left alone and printed)
    EXPR->name (outside transport/)                             -> stt_name(EXPR)

EXPR names an ops table: identifiers joined by -> or . ending in `ops` or `_ops` (ops,
ctx->ops, comm->ops, fake_inner_ops, fc->inner->ops). Continuation lines aligned under the
old call's '(' move with it.

    scripts/stt-wrap.py FILE...
"""
import re
import sys

TABLE_OPS = {'probe', 'init', 'fini', 'devices', 'get_props', 'listen', 'connect'}
OBJ_OPS = {'accept', 'reg_mr', 'reg_mr_dmabuf', 'dereg_mr', 'isend', 'irecv', 'iflush', 'test',
           'close_send', 'close_recv', 'close_listen', 'poll_fds', 'progress'}
EXPR = r'((?<![\w.>])(?:[A-Za-z_]\w*(?:\[[^\]]*\])?(?:->|\.))*(?:[A-Za-z_]\w*_)?ops)'
OPS = '|'.join(sorted(TABLE_OPS | OBJ_OPS, key=len, reverse=True))
CALL = re.compile(EXPR + r'->(' + OPS + r')\(')
NAME = re.compile(EXPR + r'->name\b(?!\s*\()')


def skip_quoted(s, j):
    """s[j] opens a string or character literal; returns the index of its closing quote."""
    q = s[j]
    j += 1
    while s[j] != q:
        j += 2 if s[j] == '\\' else 1
    return j


def split_args(s, i):
    """s[i] follows a '('; returns (the argument strings, the index after the ')')."""
    depth, args, cur, j = 0, [], i, i
    while j < len(s):
        c = s[j]
        if c in '([{':
            depth += 1
        elif c in ')]}':
            if depth == 0:
                args.append(s[cur:j])
                return args, j + 1
            depth -= 1
        elif c == ',' and depth == 0:
            args.append(s[cur:j])
            cur = j + 1
        elif c in '"\'':
            j = skip_quoted(s, j)
        j += 1
    raise ValueError('unbalanced parentheses')


def convert(text, path):
    out, pos, kept = [], 0, []
    for m in CALL.finditer(text):
        if m.start() < pos:
            continue
        expr, op = m.group(1), m.group(2)
        args, end = split_args(text, m.end())
        if len(args) == 1 and args[0].strip() == '':
            args = []
        if op in TABLE_OPS:
            rest = ''
            if args:
                rest = ', ' + args[0].lstrip() + ''.join(',' + a for a in args[1:])
            new = 'stt_%s(%s%s)' % (op, expr, rest)
        else:
            first = args[0].strip() if args else ''
            if first in ('NULL', '0') or first.startswith('('):
                line = text.count('\n', 0, m.start()) + 1
                kept.append('%s:%d: %s->%s(%s, ...) left alone' % (path, line, expr, op, first))
                continue
            new = 'stt_%s(%s)' % (op, ','.join(args))
        line_start = text.rfind('\n', 0, m.start()) + 1
        old_col = m.end() - 1 - line_start
        delta = (m.start() - line_start + new.index('(')) - old_col
        if delta != 0 and '\n' in new:
            def shift(mm):
                n = len(mm.group(1))
                return '\n' + ' ' * (n + delta) if n >= old_col + 1 else mm.group(0)
            new = re.sub(r'\n( +)', shift, new)
        out.append(text[pos:m.start()])
        out.append(new)
        pos = end
    out.append(text[pos:])
    text = ''.join(out)
    if not path.startswith('transport/') or path == 'transport/registry.c':
        text = NAME.sub(lambda mm: 'stt_name(%s)' % mm.group(1), text)
    return text, kept


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            src = f.read()
        new, kept = convert(src, path)
        for k in kept:
            print(k)
        if new != src:
            with open(path, 'w') as f:
                f.write(new)


if __name__ == '__main__':
    main()
