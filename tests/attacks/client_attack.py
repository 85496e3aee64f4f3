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
- client_redirect (issue 49, second attacker): every reply is a 307 to another host (127.0.0.2, a second
  listener); broke when a request carrying the token (Authorization, or the token anywhere in it)
  reaches that host.
- client_endless: replies with no length that do not end (a JSON string, 40 MiB a second, up to 45 s or 1 GiB),
  broke when a command runs past 40 s or its memory grows 200 MiB; and a server that never answers, broke
  past 150 s (the client's read timeout was seen at about 2 minutes).
- client_zip_escape: `checks fetch` gets a zip whose entries climb out (`../`), are absolute
  (`/tmp/...`), or pass through a symlink entry pointing outside; broke when any file lands outside the
  output folder or a symlink is written.
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
    other = ''       # client_redirect: where every reply sends the client
    silent_for = 60  # client_endless: how long a silent server holds a request
    escape_zip = None


def _escape_zip(outside, part):
    """A release zip whose entries climb out of the folder they are unpacked in, one way per part."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        z.writestr('01_tensors/strides.py', 'x = 1\n')
        if part == 'dotdot':
            z.writestr('../chk_atk_escape_dotdot', 'CHKATK')
            z.writestr('01_tensors/../../chk_atk_escape_dotdot2', 'CHKATK')
        elif part == 'absolute':
            z.writestr(os.path.join(outside, 'chk_atk_escape_abs'), 'CHKATK')
        else:   # a symlink entry (the Unix mode in the high bits), alone or with a file written through it
            link = zipfile.ZipInfo('01_tensors/link')
            link.external_attr = (0o120777 << 16)
            z.writestr(link, outside)
            if part == 'symlink_through':
                z.writestr('01_tensors/link/chk_atk_escape_sym', 'CHKATK')
    return buf.getvalue()


class Other(BaseHTTPRequestHandler):
    """The other host of client_redirect: records what reaches it."""
    def log_message(self, *a):
        pass

    def _reply(self):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(min(n, 1 << 20)) if n else b''
        self.server.requests.append((self.command, self.path, str(self.headers), body))
        self.send_response(404)
        self.send_header('Content-Length', '0')
        self.end_headers()

    do_GET = do_POST = do_PUT = do_HEAD = _reply


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
        if mode == 'redirect':
            self.send_response(307)
            self.send_header('Location', srv.other + self.path)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        if mode == 'silent':
            import time
            time.sleep(srv.silent_for)
            return
        if mode == 'endless':
            self.send_response(200)
            self.send_header('Content-Type', 'application/zip' if 'zip' in self.path or 'release' in self.path
                             else 'application/json')
            self.end_headers()
            import time
            t0 = time.time()
            try:
                self.wfile.write(b'{"id": "')
                sent = 0
                while time.time() - t0 < 45 and sent < (1 << 30):
                    self.wfile.write(b'a' * (4 << 20))
                    sent += 4 << 20
                    time.sleep(0.1)
            except OSError:
                pass
            return
        if mode == 'zip_escape' and self.command == 'GET' and re.search(r'distribution|release|fetch|\.zip', self.path):
            body, ctype = srv.escape_zip, 'application/zip'
        elif mode == 'fetch_bomb' and self.command == 'GET' and re.search(r'distribution|release|fetch|\.zip', self.path):
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
            if mode in ('fetch_bomb', 'zip_escape'):
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
        rows += second_round(checks, srv, url, env, tmp, work)
    finally:
        srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def second_round(checks, srv, url, env, tmp, work):
    """Issue 49's second attacker: redirects to another host, replies without end, zip entries that escape."""
    import time
    rows = []
    # redirect: another host (127.0.0.2) gets every request the client follows
    other = Server(('127.0.0.2', 0), Other)
    other.requests = []
    threading.Thread(target=other.serve_forever, daemon=True).start()
    srv.mode, srv.other = 'redirect', f'http://127.0.0.2:{other.server_address[1]}'
    try:
        for args in (['submit', '--no-wait'], ['submit', '--status', '42'], ['fetch', '01_tensors', '--out', os.path.join(tmp, 'r1')]):
            run_client([checks, *args], env, work, timeout=25)
        o, _ = run_client([checks, 'login', url], env, tmp, (TOKEN + '\n').encode(), timeout=25)
    finally:
        other.shutdown()
    leaked = [r for r in other.requests if TOKEN in r[2] or TOKEN.encode() in r[3] or TOKEN in r[1]
              or 'authorization' in r[2].lower()]
    rows.append(('client_redirect', 'BROKE' if leaked else 'held',
                 f'{len(leaked)} request(s) with the token reached the other host, e.g. {leaked[0][0]} {leaked[0][1]}'
                 if leaked else f'{len(other.requests)} request(s) followed there, none with the token'))
    # endless and silent replies
    worst, notes = 0.0, []
    # a server that never answers holds the client at most its read timeout (about 2 minutes, seen):
    # broke only past 150 s, the bound a student waits for; one command, as they share the HTTP client
    srv.silent_for = 170
    for mode, args, limit in (('endless', ['submit', '--no-wait'], 40),
                              ('endless', ['fetch', '01_tensors', '--out', os.path.join(tmp, 'e1')], 40),
                              ('silent', ['fetch', '01_tensors', '--out', os.path.join(tmp, 'e2')], 150)):
        srv.mode = mode
        if True:
            base = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            t0 = time.time()
            o, _ = run_client([checks, *args], env, work, timeout=limit)
            took = time.time() - t0
            grew = max(0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss - base) / 1024
            if b'(timeout)' in o or took >= limit or grew > 200:
                notes.append(f'{mode} {args[0]}: {took:.0f} s, +{grew:.0f} MiB')
            worst = max(worst, took)
            if b'Traceback (most recent call last)' in o:
                notes.append(f'{mode} {args[0]}: a traceback')
    rows.append(('client_endless', 'BROKE' if notes else 'held', '; '.join(notes) or f'longest {worst:.0f} s'))
    # zip entries that escape the output folder
    outside = tempfile.mkdtemp(prefix='chkatk-client-outside-')
    bad, said = [], []
    for part in ('dotdot', 'absolute', 'symlink', 'symlink_through'):
        srv.mode, srv.escape_zip = 'zip_escape', _escape_zip(outside, part)
        dest = os.path.join(tmp, 'z-' + part, 'out')
        os.makedirs(os.path.dirname(dest))
        o, _ = run_client([checks, 'fetch', '01_tensors', '--out', dest], env, work, timeout=40)
        escaped = [os.path.join(d, f) for top in (outside, tmp, work) for d, _, fs in os.walk(top) for f in fs
                   if f.startswith('chk_atk_escape')
                   and not os.path.realpath(os.path.join(d, f)).startswith(os.path.realpath(dest) + os.sep)]
        escaped += [p for p in ('/tmp/chk_atk_escape_dotdot', '/tmp/chk_atk_escape_dotdot2') if os.path.exists(p)]
        links = [os.path.join(d, f) for d, ds, fs in os.walk(os.path.dirname(dest)) for f in fs + ds
                 if os.path.islink(os.path.join(d, f))]
        if escaped or links or b'Traceback (most recent call last)' in o:
            bad.append(f'{part}: outside {escaped[:2]}, symlinks {links[:2]}' + (', a traceback' if b'Traceback' in o else ''))
        last = o.decode('utf-8', 'replace').strip().splitlines()
        said.append(f'{part}: {last[-1][:70] if last else "no output"}')
    rows.append(('client_zip_escape', 'BROKE' if bad else 'held', '; '.join(bad or said)))
    shutil.rmtree(outside, ignore_errors=True)
    return rows


def main_second(checks):
    """Only issue 49's second-round rows (client_redirect, client_endless, client_zip_escape)."""
    srv = Server(('127.0.0.1', 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f'http://127.0.0.1:{srv.server_address[1]}'
    tmp = tempfile.mkdtemp(prefix='chkatk-client-')
    env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, 'cfg'), NO_COLOR='', TERM='xterm-256color')
    env.pop('CHECKS_COURSE', None)
    work = os.path.join(tmp, '01_tensors')
    shutil.copytree(os.path.join(REPO, 'assignments', '01_tensors'), work)
    try:
        srv.mode = 'escape'
        run_client([checks, 'login', url], env, tmp, (TOKEN + '\n').encode())
        return second_round(checks, srv, url, env, tmp, work)
    finally:
        srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--second']
    checks = args[0] if args else shutil.which('checks')
    for row in (main_second if '--second' in sys.argv else main)(checks):
        print(*row, sep='\t')
