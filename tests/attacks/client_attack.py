#!/usr/bin/env python3
"""Lie to the student client: a hostile course server on 127.0.0.1 answers `checks login`,
`checks submit` and `checks fetch` (issue 49's client items). Knows only the docs: every request,
whatever its path, gets the reply of the current mode.

Rows (attack, result, why), each with its own success check:
- client_escape: ids, messages and names carry OSC 52 (clipboard), a screen clear, an OSC 8
  link and rich markup; broke when a raw ESC from the payload reaches the client's output.
- client_traversal: the submission id is `../../admin/users`; broke when the client sends a request
  (with the token) to a path holding `admin/users` or `..`.
- client_malformed: replies are not JSON, truncated JSON, wrong types, a 50 MB body; broke when
  the client prints a Python traceback.
- client_fetch_bomb: `checks fetch` gets a zip with a 300 MB entry of zeros (300 KB on the wire);
  broke when the client's peak memory grows 150 MiB past the other commands' or it writes the entry out whole.
"""

import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ESC = '\x1b]52;c;Q0hLQVRL\x07\x1b[2J\x1b]8;;http://evil.example\x1b\\CHKATK\x1b]8;;\x1b\\[bold red]CHKATKRICH[/]'
TOKEN = 'chkatk-token-0123456789'


def _bomb():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
        with z.open('01_tensors/strides.py', 'w', force_zip64=True) as fh:
            chunk = b'\0' * (1 << 20)
            for _ in range(300):
                fh.write(chunk)
    return buf.getvalue()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    mode = 'escape'
    requests = []
    bomb = None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _reply(self):
        n = int(self.headers.get('Content-Length') or 0)
        if n:
            self.rfile.read(min(n, 50 << 20))
        srv = self.server
        srv.requests.append((self.command, self.path, bool(self.headers.get('Authorization'))))
        mode = srv.mode
        if mode == 'fetch_bomb' and self.command == 'GET' and re.search(r'distribution|release|fetch|\.zip', self.path):
            body, ctype = srv.bomb, 'application/zip'
        elif mode == 'malformed':
            k = len(srv.requests) % 4
            body = [b'{"id": ', b'<html>not json</html>', json.dumps({'id': {'x': [1]}, 'status': 7, 'score': 'a'}).encode(),
                    b'[' * 100000][k]
            ctype = 'application/json'
        else:
            ident = '../../admin/users' if mode == 'traversal' else ESC + '42'
            payload = dict(id=ident, submission=ident, submission_id=ident, status='done' if mode != 'traversal' else 'queued',
                           state='graded', message=ESC, error=ESC, detail=ESC, name=ESC, student=ESC, user=ESC,
                           assignment='01_tensors', score=100, max_score=100, feedback=ESC, feedback_md=ESC,
                           url='http://127.0.0.1/' + ESC, position=1, queue=1, public=ESC, ok=True, token_ok=True,
                           assignments=[dict(name='01_tensors', title=ESC)])
            if mode == 'fetch_bomb':
                payload['download'] = payload['url'] = '/release/01_tensors.zip'
            body, ctype = json.dumps(payload).encode(), 'application/json'
        self.send_response(200)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    do_GET = do_POST = do_PUT = do_HEAD = _reply


def run_client(args, env, cwd, stdin=b'', timeout=60):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        p = subprocess.run(args, input=stdin, capture_output=True, env=env, cwd=cwd, timeout=timeout)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b'') + (e.stderr or b'') + b'\n(timeout)'
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return out, peak if peak > before else 0


def main(checks):
    srv = Server(('127.0.0.1', 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f'http://127.0.0.1:{srv.server_address[1]}'
    tmp = tempfile.mkdtemp(prefix='chkatk-client-')
    env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, 'cfg'), NO_COLOR='', TERM='xterm-256color')
    env.pop('CHECKS_COURSE', None)
    work = os.path.join(tmp, '01_tensors')
    shutil.copytree(os.path.join(REPO, 'assignments', '01_tensors'), work)
    rows = []
    try:
        # escape
        srv.mode = 'escape'
        out = b''
        o, _ = run_client([checks, 'login', url], env, tmp, (TOKEN + '\n').encode()); out += o
        o, _ = run_client([checks, 'submit', '--no-wait'], env, work); out += o
        o, _ = run_client([checks, 'submit', '--status', '42'], env, work); out += o
        o, _ = run_client([checks, 'submit'], env, work, timeout=40); out += o
        esc = [e for e in (b'\x1b]52;', b'\x1b[2J', b'\x1b]8;;http://evil') if e in out]
        rows.append(('client_escape', 'BROKE' if esc else 'held', f'raw {esc} on the terminal' if esc else ''))
        # traversal
        srv.mode, srv.requests[:] = 'traversal', []
        o, _ = run_client([checks, 'submit'], env, work, timeout=25)
        bad = [r for r in srv.requests if 'admin/users' in r[1] or '..' in r[1]]
        rows.append(('client_traversal', 'BROKE' if bad else 'held',
                     f'{bad[0][0]} {bad[0][1]} (token sent: {bad[0][2]})' if bad else ''))
        # malformed
        srv.mode, srv.requests[:] = 'malformed', []
        out = b''
        for args in (['login', url], ['submit', '--no-wait'], ['submit', '--status', '1'], ['submit', '--no-wait'],
                     ['fetch', '01_tensors', '--out', os.path.join(tmp, 'f1')]):
            o, _ = run_client([checks, *args], env, work, (TOKEN + '\n').encode(), timeout=25); out += o
        tb = b'Traceback (most recent call last)' in out
        rows.append(('client_malformed', 'BROKE' if tb else 'held', 'a Python traceback on the terminal' if tb else ''))
        # fetch bomb
        srv.mode, srv.bomb = 'fetch_bomb', _bomb()
        baseline = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        o, _ = run_client([checks, 'fetch', '01_tensors', '--out', os.path.join(tmp, 'f2')], env, tmp, timeout=60)
        peak = max(0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss - baseline)
        big = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(tmp, 'f2')) for f in fs
               if os.path.getsize(os.path.join(d, f)) > (100 << 20)]
        peak_mib = peak / 1024
        broke = peak_mib > 150 or big
        rows.append(('client_fetch_bomb', 'BROKE' if broke else 'held',
                     f'peak +{peak_mib:.0f} MiB over the other commands; entries written whole: {len(big)}' if broke else ''))
    finally:
        srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == '__main__':
    checks = sys.argv[1] if len(sys.argv) > 1 else shutil.which('checks')
    for row in main(checks):
        print(*row, sep='\t')
