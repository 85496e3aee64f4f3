#!/usr/bin/env python3
"""Grade every hostile submission of tests/attacks/corpus beside an honest one, at both isolation
levels, and say which attacks succeeded by their own criterion (ATTACK.md; the checks below).

    python tests/attacks/run_corpus.py                     # everything, bwrap and fork
    python tests/attacks/run_corpus.py --levels fork --assignments 02_autograd

Per assignment and level, one `checks grade --jobs 1` batch holds every attack of that
assignment (sorted by name: `zr_*` readers run after the writers), the controls in
tests/attacks/controls (`ctl_*`: what the same code earns without the trick) and the reference
solution as the honest neighbour (`zz_honest`, last). Kernel objects, shared files, processes
and network connections are looked for before and after each batch and removed afterwards (they
are the corpus's own: System V keys 0x43a7...., files chk_atk_*, processes CHKATKDAEMON).
Exit status 1 if any attack succeeded or the honest neighbour lost a point, 2 on a setup error.
"""

import argparse
import csv
import glob
import html
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, 'corpus')
CONTROLS = os.path.join(HERE, 'controls')
ASSIGNMENTS = ['01_tensors', '02_autograd', '03_mlp']
NET_PORT = 47143
SHARED_DIRS = ['/dev/shm', '/tmp', '/var/tmp', '/var/lock', '/run/lock', '/dev/mqueue']

# --------------------------------------------------------------------------- criteria
# Each check is (kind, argument). An attack "broke" when any of its checks holds.
LIVE_MARKUP = [
    r"<script>alert\('CHKATK",
    r"<script>alert\(3\)",
    r"<img\s[^>]*onerror",
    r"<a\s[^>]*href=\"?javascript:",
    r"<h[1-6][^>]*>\s*CHKATK-FORGED",
]
# a frame/gc leak that carried foreign source (the raise line of the attack itself never matches)
FOREIGN_SRC = r'FOREIGN<<[^\n]*?(SRC|GCSRC|LC):|FOREIGN<<[\s\S]{0,400}?\n\s*(SRC|GCSRC|LC):'
# a counter that two earlier imports bumped (a count of 1 can be a second import within one question)
STATE_SURVIVED = r'STATE_SURVIVED: [^\n]*?=([2-9]|\d{2,})(;|\s|$)|STATE_SURVIVED: [^\n]*(broadcasting|sysv)'
ATTACKS = {
    # 01_tensors
    ('01_tensors', 'frame_gc_leak'): dict(cls='carry', checks=[('secret', None), ('marker', FOREIGN_SRC)]),
    ('01_tensors', 'fs_hunt'): dict(cls='carry', checks=[('secret', None), ('marker', r'FILE \S*(autograder|solutions)/')]),
    ('01_tensors', 'patch_numpy_torch'): dict(cls='forge', checks=[('above_control', 'wrong_plain')]),
    ('01_tensors', 'lying_exceptions'): dict(cls='forge', checks=[('above_control', 'stub'), ('grader_error', None)], solo=True),
    ('01_tensors', 'junk_returns'): dict(cls='grader-side', checks=[('above_control', 'stub'), ('grader_error', None)], solo=True),
    ('01_tensors', 'huge_returns'): dict(cls='budget', checks=[('slow', 60), ('grader_error', None), ('above_control', 'stub')], solo=True),
    ('01_tensors', 'markup_escape'): dict(cls='markup', checks=[('live_markup', None), ('term_escape', None), ('csv_formula', None)]),
    ('01_tensors', 'state_between_questions'): dict(cls='state', checks=[('marker', STATE_SURVIVED), ('leftover', 'state')]),
    ('01_tensors', 'ipc_writer'): dict(cls='kernel', checks=[('leftover', 'k01')]),
    ('01_tensors', 'zr_ipc_reader'): dict(cls='kernel', checks=[('marker', r'SHARED_FOUND: (sysv|abstract|/)')]),
    ('01_tensors', 'dotname_batch'): dict(cls='names', checks=[('missing_row', 'aa_honest_in_class')], path_only=True),
    ('01_tensors', 'notebook_bad_bytes'): dict(cls='grader-side', checks=[('grader_error', None)]),
    # 02_autograd
    ('02_autograd', 'recursion_ctypes'): dict(cls='forge', checks=[('above_control', 'recursive_plain')]),
    ('02_autograd', 'recursion_guard_unwrap'): dict(cls='forge', checks=[('above_control', 'recursive_plain')]),
    ('02_autograd', 'reference_rules_leak'): dict(cls='carry', checks=[('secret', 'rules.py'), ('marker', r'REFLEAK<<(?!\' \+)(?:(?!at engine\.py)[\s\S]){0,8000}?(ndim|sum_to_shape|\bnp\b|axis)')]),
    ('02_autograd', 'reference_rules_writer'): dict(cls='kernel', checks=[('leftover', 'rules02')]),
    ('02_autograd', 'zr_rules_reader'): dict(cls='kernel', checks=[('above_control', 'stub')]),
    ('02_autograd', 'driver_frame_leak'): dict(cls='carry', checks=[('secret', None), ('marker', FOREIGN_SRC)]),
    ('02_autograd', 'junk_in_driver_returns'): dict(cls='grader-side', checks=[('grader_error', None)]),
    ('02_autograd', 'markup_python_markdown'): dict(cls='markup', checks=[('live_markup', None), ('term_escape', None), ('csv_formula', None)]),
    ('02_autograd', 'csv_formula_name'): dict(cls='markup', checks=[('csv_formula', None)],
                                              grade_name="=2+5+cmd|' calc'!A0 CHKATKCSV"),
    ('02_autograd', 'pytest_outcomes'): dict(cls='forge', checks=[('above_control', 'stub'), ('grader_error', None), ('skipped', None)]),
    # 02's stand-in rules (issue 43, attack3): the reference answered by the grader
    ('02_autograd', 'standin_introspect'): dict(cls='carry', checks=[('secret', 'rules.py'), ('marker', r'STANDIN<<(?!\' \+)(?:(?!at engine\.py)[\s\S]){0,8000}?(argsort|add\.at)')]),
    ('02_autograd', 'table_unseal'): dict(cls='forge', checks=[('above_control', 'no_backward')]),
    ('02_autograd', 'oracle_writer'): dict(cls='kernel', checks=[('leftover', 'oracle02')]),
    ('02_autograd', 'zr_oracle_reader'): dict(cls='kernel', checks=[('above_control', 'stub')]),
    ('02_autograd', 'standin_fault'): dict(cls='grader-side', checks=[('grader_error', None)]),
    # the grader's answers are the student's time now: a call may use its 10 s and each question its
    # budget, as slow code of its own would (the attack takes about 2 minutes so); what must hold is
    # that no call runs past its limit unstopped and that nothing is the grader's error
    ('02_autograd', 'standin_blowup'): dict(cls='budget', checks=[('marker', r'OVERTIME<<([1-9]\d+) s'), ('grader_error', None)],
                                            solo=True, timeout=400),
    # 03_mlp
    ('03_mlp', 'optim_plain'): dict(cls='forge', checks=[('question_above', ('training.SGD', 0))]),
    ('03_mlp', 'optim_hidden'): dict(cls='forge', checks=[('question_above', ('training.SGD', 0))]),
    ('03_mlp', 'inplace_forge'): dict(cls='forge', checks=[('above_control', 'inplace_plain')]),
    ('03_mlp', 'eval_nograd_forge'): dict(cls='forge', checks=[('above_control', 'eval_plain_wrong')]),
    ('03_mlp', 'driver_frame_leak_03'): dict(cls='carry', checks=[('secret', None), ('marker', FOREIGN_SRC)]),
    ('03_mlp', 'lying_numbers'): dict(cls='grader-side', checks=[('above_control', 'stub'), ('grader_error', None)]),
    ('03_mlp', 'daemon_and_shm'): dict(cls='budget', checks=[('leftover', 'mem03'), ('leftover', 'daemon')]),
    ('03_mlp', 'network_and_dask'): dict(cls='network', checks=[('net_hit', None), ('leftover', 'dask')]),
    ('03_mlp', 'quiz_markup'): dict(cls='markup', checks=[('live_markup', None), ('term_escape', None), ('csv_formula', None)]),
    # issue 49: the Dask path's control plane from inside the sandbox (dask=True: also run by --dask
    # against a local TLS cluster at the fork level; elsewhere they find no cluster and report what they see)
    ('01_tensors', 'dask_proc_recon'): dict(cls='cluster', dask=True,
                                            checks=[('marker', r'ENVIRON_DASK: \S+|FD_TO_SCHEDULER: [^\n]{0,40}|CAPEFF_NONZERO: \S+')]),
    # a page that names a member, a task or a submission (a health check or the list of routes names none)
    ('01_tensors', 'dask_dashboard_probe'): dict(cls='cluster', dask=True, checks=[('marker', r"DASH_LEAK: \d+\S* 200 (\d+ bytes )?\['")]),
    ('01_tensors', 'dask_key_hunt'): dict(cls='cluster', dask=True, checks=[('cluster_key', None), ('marker', r'MEMREAD: \S+')]),
    # at fork the package loads from disk once the import blocker is gone (trust-boundary.md says so):
    # what must hold is that it joins nothing
    ('02_autograd', 'dask_import_distributed'): dict(cls='cluster', dask=True,
                                                     checks=[('marker', r'DASK_CLIENT_OK[^\n|]{0,60}'),
                                                             ('leftover', 'dask')]),
    ('02_autograd', 'dask_unix_forge'): dict(cls='cluster', dask=True,
                                             checks=[('marker', r'UNIX_CONNECTED: [^\n|]{0,60}|CLEARTEXT_ANSWER: [^\n|]{0,60}')]),
    ('02_autograd', 'dask_kill_neighbours'): dict(cls='cluster', dask=True, checks=[('marker', r'KILLED: [^\n|]{0,60}')]),
    ('03_mlp', 'dask_starve'): dict(cls='cluster', dask=True, checks=[('leftover', 'daemon_any')]),
    ('03_mlp', 'dask_persist'): dict(cls='cluster', dask=True, checks=[('host_files', 'persist')]),
    ('03_mlp', 'zr_dask_persist_reader'): dict(cls='cluster', dask=True, checks=[('marker', r'PERSIST_FOUND: [^\n|]{0,80}')]),
    ('03_mlp', 'dask_write_driver_out'): dict(cls='cluster', dask=True,
                                              checks=[('marker', r'OUT_WRITABLE: \S+|COURSE_READ: [^\n|]{0,60}')]),
}
# also graded by --dask beside the attacks above: the earlier corpus's hunts for files and the network
DASK_ALSO = {('01_tensors', 'fs_hunt'), ('03_mlp', 'network_and_dask')}
# what each leftover tag looks like: System V keys, file names in the shared folders, command lines
LEFTOVER = {
    'k01': dict(keys={0x43A70001}, files='chk_atk_k01', cmd='chk_atk_k01'),
    'rules02': dict(keys={0x43A70002}, files='chk_atk_rules02', cmd='chk_atk_rules02'),
    'mem03': dict(keys={0x43A70003}, files='chk_atk_mem03', cmd='chk_atk_mem03'),
    'state': dict(keys={0x43A70011}, files='chk_atk_state', cmd=None),
    'oracle02': dict(keys=set(), files='chk_atk_oracle02', cmd=None),
    'daemon': dict(keys=set(), files=None, cmd='time.sleep(100)'),
    'dask': dict(keys=set(), files='chk_atk_dask', cmd=None),
    'daemon_any': dict(keys=set(), files=None, cmd='CHKATKDAEMON'),
}
# where dask_persist may leave files a later run could see (host side; walked, bounded)
PERSIST_TOPS = ['/tmp', '/var/tmp', '/dev/shm', '/run', '/var/lock', '/var/cache', '/var/lib', '/opt', '/srv', '/home',
                REPO, os.path.expanduser('~')]
TERM_ESCAPES = [b'\x1b]52;', b'\x1b[2J', b'\x1b]8;;http://evil']


# --------------------------------------------------------------------------- helpers
def find_checks():
    for c in (os.environ.get('CHECKS'), os.path.join(REPO, '.venv/bin/checks'), shutil.which('checks'),
              '/work/main/.venv/bin/checks'):
        if c and os.path.exists(c):
            return c
    sys.exit('run_corpus: no `checks` found (set CHECKS=/path/to/checks)')


def ipc_objects():
    """{(kind, key, id)} of System V objects whose key is one of the corpus's (0x43a7....)."""
    found = set()
    for kind, flag in (('m', '-m'), ('s', '-s'), ('q', '-q')):
        try:
            out = subprocess.run(['ipcs', flag], capture_output=True, text=True, timeout=10).stdout
        except Exception:
            continue
        for line in out.splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[0].startswith('0x'):
                try:
                    key = int(parts[0], 16)
                except ValueError:
                    continue
                if key >> 16 == 0x43A7:
                    found.add((kind, key, parts[1]))
    return found


def shared_files():
    out = set()
    for d in SHARED_DIRS:
        out.update(glob.glob(os.path.join(d, 'chk_atk_*')))
    return out


def attack_processes():
    """{pid: cmdline} of the corpus's own daemons (CHKATKDAEMON in their command line)."""
    procs = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\0', b' ').decode('utf-8', 'replace')
        except OSError:
            continue
        if 'CHKATKDAEMON' in cmd and int(pid) != os.getpid():
            procs[int(pid)] = cmd
    return procs


def persist_files(budget=8.0):
    """Files dask_persist writes (chk_atk_persist*), wherever on the host it could write them."""
    found, t0 = set(), time.time()
    for top in PERSIST_TOPS:
        for dirpath, dirs, files in os.walk(top):
            if time.time() - t0 > budget:
                return found
            dirs[:] = [d for d in dirs if d not in ('.git', 'node_modules', 'site-packages') and not d.startswith('chkatk-')]
            if dirpath.count('/') > 7:
                dirs[:] = []
            found.update(os.path.join(dirpath, f) for f in files if f.startswith('chk_atk_persist'))
    import site
    for d in (site.getusersitepackages(), *[p for p in sys.path if p]):
        if os.path.exists(os.path.join(d, 'chk_atk_persist.pth')):
            found.add(os.path.join(d, 'chk_atk_persist.pth'))
    return found


def snapshot():
    return dict(ipc=ipc_objects(), files=shared_files(), procs=attack_processes(), persist=persist_files())


def cleanup():
    """Remove what the corpus itself created (by id, by its own names)."""
    for pid in attack_processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for kind, _key, ident in ipc_objects():
        subprocess.run(['ipcrm', f'-{kind}', ident], capture_output=True)
    for p in shared_files() | persist_files():
        try:
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
        except OSError:
            pass


class Listener(threading.Thread):
    """127.0.0.1:NET_PORT: records what connects (the network attack's success)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.hits = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(('127.0.0.1', NET_PORT))
            self.sock.listen(16)
            self.ok = True
        except OSError:
            self.ok = False

    def run(self):
        while self.ok:
            try:
                conn, _ = self.sock.accept()
                conn.settimeout(2)
                data = conn.recv(256)
                conn.close()
                self.hits.append(data)
            except Exception:
                pass


def unescape(text):
    """Feedback text as a reader sees it: Markdown backslash escapes and HTML entities undone."""
    text = re.sub(r'\\(.)', r'\1', text)
    return html.unescape(text)


def solution_lines(assignment, only=None):
    """Lines of the reference that no released file holds: finding one in feedback is a leak."""
    released = set()
    for path in glob.glob(os.path.join(REPO, 'assignments', assignment, '**', '*'), recursive=True):
        if os.path.isfile(path):
            try:
                released.update(line.strip() for line in open(path, errors='replace'))
            except OSError:
                pass
    lines = set()
    for path in glob.glob(os.path.join(REPO, 'solutions', assignment, '*.py')):
        if only and os.path.basename(path) != only:
            continue
        for line in open(path, errors='replace'):
            s = line.strip()
            if len(s) >= 30 and s not in released and not s.startswith(('#', '"""', "'''")) and 'SOLUTION' not in s:
                lines.add(s)
    return lines


def render_markdown(md_text):
    """feedback.md rendered by every renderer a course might use."""
    out = []
    try:
        from markdown_it import MarkdownIt
        out.append(('markdown-it', MarkdownIt('commonmark').render(md_text)))
    except Exception as e:
        out.append(('markdown-it', f'(markdown-it failed: {e!r})'))
    try:
        import markdown
        out.append(('python-markdown', markdown.markdown(md_text, extensions=['tables', 'fenced_code'])))
    except ImportError:
        pass
    except Exception as e:
        out.append(('python-markdown', f'(python-markdown failed: {e!r})'))
    return out


# --------------------------------------------------------------------------- one batch
def honest_files(assignment, dest):
    os.makedirs(dest)
    for path in glob.glob(os.path.join(REPO, 'solutions', assignment, '*')):
        base = os.path.basename(path)
        if os.path.isfile(path) and (base.endswith('.py') or base == 'quiz.toml') and not base.startswith(assignment):
            shutil.copy(path, dest)


# where an attack's carrier files come from: the reference (solutions/) or the stubs a student
# starts from (assignments/); the list of those it leaves as they are, and the suffix of a tail
CARRIERS = {'solutions': ('FROM_REFERENCE', '.appended'), 'assignments': ('FROM_STUB', '.stub_appended')}


def copy_submission(src, dest, assignment):
    """The attack's own files; for each carrier (CARRIERS), its files the attack's list names as
    they are, and for each NAME plus the carrier's suffix, the carrier's NAME with that text after
    it: the corpus keeps only what an attack changes, not copies of solutions/ or the stubs."""
    kept = [name for pair in CARRIERS.values() for name in (pair[0], '*' + pair[1])]
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns('ATTACK.md', '__pycache__', *kept))
    for folder, (listing, suffix) in CARRIERS.items():
        carrier = os.path.join(REPO, folder, assignment)
        listed = os.path.join(src, listing)
        if os.path.isfile(listed):
            for name in open(listed).read().split():
                shutil.copy(os.path.join(carrier, name), dest)
        for tail in glob.glob(os.path.join(src, '*' + suffix)):
            name = os.path.basename(tail)[:-len(suffix)]
            with open(os.path.join(carrier, name), 'rb') as start, open(tail, 'rb') as attack, \
                    open(os.path.join(dest, name), 'wb') as written:
                written.write(start.read() + attack.read())


def run_batch(checks, assignment, level, names, controls, listener, timeout, keep, cluster=None, tag=''):
    tmp = tempfile.mkdtemp(prefix=f'chkatk-{assignment}-{level}{tag}-')
    subs, out = os.path.join(tmp, 'subs'), os.path.join(tmp, 'out')
    os.makedirs(subs)
    paths, graded_as = [], {}
    for name in names:
        spec = ATTACKS[(assignment, name)]
        as_name = spec.get('grade_name', name)
        dest = os.path.join(subs, as_name)
        copy_submission(os.path.join(CORPUS, assignment, name), dest, assignment)
        paths.append(dest)
        graded_as[name] = as_name
    for ctl in controls:
        dest = os.path.join(subs, 'ctl_' + ctl)
        copy_submission(os.path.join(CONTROLS, assignment, ctl), dest, assignment)
        paths.append(dest)
    honest = os.path.join(subs, 'zz_honest')
    honest_files(assignment, honest)
    paths.append(honest)

    cleanup()
    before = snapshot()
    listener.hits.clear()
    cmd = [checks, 'grade', assignment, *paths, '--out', out, '--jobs', '1', '--isolation', level, '--course', REPO]
    env = None
    if cluster is not None:   # on the cluster: its workers choose the level; the course only root may read
        cmd = [checks, 'grade', assignment, *paths, '--out', out, '--jobs', '2', '--course', cluster.course,
               '--scheduler', cluster.address]
        env = cluster.env
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp, start_new_session=True, env=env)
    try:
        stdout, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the grade command we started, and its process group
        except OSError:
            pass
        stdout, _ = proc.communicate()
        rc = 'timeout'
    wall = time.time() - t0
    time.sleep(0.5)
    after = snapshot()
    net_hits = list(listener.hits)
    new = dict(ipc=after['ipc'] - before['ipc'], files=after['files'] - before['files'],
               persist=after['persist'] - before['persist'],
               procs={p: c for p, c in after['procs'].items() if p not in before['procs']})
    # dask marker file may be inside a private /tmp; only a host-visible one counts
    results = collect(out)
    cleanup()
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return dict(tmp=tmp, out=out, stdout=stdout, rc=rc, wall=wall, results=results, new=new,
                net_hits=net_hits, graded_as=graded_as, cluster_key=cluster.key if cluster is not None else None)


def collect(out):
    """{submission name: {status, score, seconds, tests: {q: (score, max, status, output)}, md, html}}."""
    res = {}
    db = os.path.join(out, 'gradebook.sqlite')
    if os.path.exists(db):
        con = sqlite3.connect(db)
        for name, status, score, error, seconds in con.execute(
                'select name, status, score, error, seconds from submissions'):
            res[name] = dict(status=status, score=score, error=error, seconds=seconds, tests={}, md='', html='')
        con.close()
    for rpath in glob.glob(os.path.join(out, '*', 'results.json')):
        try:
            data = json.load(open(rpath))
        except Exception:
            continue
        name = data.get('extra_data', {}).get('submission')
        entry = res.setdefault(name, dict(status='?', score=data.get('score'), error='', seconds=0, tests={}))
        entry['tests'] = {t['name']: (t.get('score') or 0, t.get('max_score'), t.get('status'), t.get('output', ''))
                          for t in data.get('tests', [])}
        d = os.path.dirname(rpath)
        for key, fname in (('md', 'feedback.md'), ('html', 'feedback.html')):
            try:
                entry[key] = open(os.path.join(d, fname), errors='replace').read()
            except OSError:
                entry[key] = ''
        entry['results_text'] = json.dumps(data)
    res['__report__'] = dict(html=_read(os.path.join(out, 'report.html')))
    res['__csv__'] = {os.path.basename(p): _read(p) for p in glob.glob(os.path.join(out, '*.csv'))}
    return res


def _read(path):
    try:
        return open(path, errors='replace').read()
    except OSError:
        return ''


# --------------------------------------------------------------------------- judging
def judge(assignment, name, batch, secrets_cache):
    spec = ATTACKS[(assignment, name)]
    results = batch['results']
    me = results.get(batch['graded_as'].get(name, name))
    if me is None and spec.get('grade_name'):   # graded under a mended name (name~hash)
        me = next((r for n, r in results.items() if 'CHKATKCSV' in (n or '')), None)
    reasons = []
    for kind, arg in spec['checks']:
        hit = check(kind, arg, assignment, name, me, batch, secrets_cache)
        if hit:
            reasons.append(f'{kind}: {hit}')
    score = '-' if me is None else f"{me.get('score') or 0:.1f}"
    return score, reasons


def feedback_text(me):
    return unescape((me or {}).get('md', '')) + '\n' + html.unescape((me or {}).get('html', '')) + '\n' + \
        '\n'.join(t[3] for t in (me or {}).get('tests', {}).values())


def check(kind, arg, assignment, name, me, batch, secrets_cache):
    results = batch['results']
    if kind == 'missing_row':
        return f'{arg} has no row' if arg not in results else ''
    if kind == 'net_hit':
        hits = [h for h in batch['net_hits'] if b'CHKATK-NET' in h]
        return f'{len(hits)} connection(s) reached 127.0.0.1:{NET_PORT}' if hits else ''
    if kind == 'leftover':
        spec = LEFTOVER[arg]
        left = [f'ipc {k}:{hex(key)}' for k, key, _ in batch['new']['ipc'] if key in spec['keys']]
        if spec['files']:
            left += [p for p in batch['new']['files'] if spec['files'] in p]
        if spec['cmd']:
            left += [f'pid {p}' for p, c in batch['new']['procs'].items() if spec['cmd'] in c]
        return ', '.join(sorted(left)[:4]) if left else ''
    if kind == 'cluster_key':   # a run of the cluster's own private key in the feedback
        key = batch.get('cluster_key') or ''
        body = ''.join(key.splitlines()[1:-1])
        text = feedback_text(me).replace('\\n', '').replace('\n', '')
        runs = [body[i:i + 40] for i in range(0, max(0, len(body) - 40), 20)]
        hit = next((r for r in runs if r in text), None)
        return f'the cluster key read: {hit!r}' if hit else ''
    if kind == 'host_files':
        left = sorted(batch['new']['persist'])
        return f'{len(left)} file(s) on the host, e.g. {left[:3]}' if left else ''
    if kind == 'term_escape':
        found = [e for e in TERM_ESCAPES if e in batch['stdout']]
        return f'{found} on the terminal' if found else ''
    if kind == 'csv_formula':
        bad = []
        for fname, text in results.get('__csv__', {}).items():
            try:
                for row in csv.reader(text.splitlines()):
                    for cell in row:
                        if 'CHKATK' in cell and cell[:1] in ('=', '+', '-', '@', '\t', '\r'):
                            bad.append(f'{fname}: {cell[:40]!r}')
            except csv.Error:
                pass
        return '; '.join(bad[:2])
    if me is None:
        return ''
    if kind == 'above_control':
        ctl = results.get('ctl_' + arg)
        if ctl is None:
            return ''
        above = [q for q, t in me['tests'].items()
                 if not q.startswith('quiz.') and q in ctl['tests'] and t[0] > ctl['tests'][q][0] + 1e-9]
        return f"above ctl_{arg} on {', '.join(above[:4])}" if above else ''
    if kind == 'question_above':
        q, val = arg
        t = me['tests'].get(q)
        return f'{q} scored {t[0]}' if t and t[0] > val else ''
    if kind == 'grader_error':
        if me.get('status') not in ('graded', '?'):
            return f"status {me.get('status')}: {(me.get('error') or '')[:80]}"
        for q, t in me['tests'].items():
            if re.match(r'\s*(grader error|internal error|the grader failed)', t[3] or '', re.I) or \
                    t[2] not in ('passed', 'failed', None):
                return f'{q}: {(t[3] or "")[:80]!r}'
        return ''
    if kind == 'skipped':
        sk = [q for q, t in me['tests'].items() if t[2] not in ('passed', 'failed')]
        return f'status of {sk[:3]}' if sk else ''
    if kind == 'slow':
        text = feedback_text(me)
        return f"{me.get('seconds', 0):.0f} s, no time limit in feedback" if (me.get('seconds') or 0) > arg and 'time limit' not in text else ''
    if kind == 'marker':
        m = re.search(arg, feedback_text(me))
        return repr(m.group(0)[:60]) if m else ''
    if kind == 'secret':
        key = (assignment, arg)
        if key not in secrets_cache:
            secrets_cache[key] = solution_lines(assignment, arg)
        own = set()   # lines the attack itself carries (a solution used as carrier) are not a leak
        for path in glob.glob(os.path.join(CORPUS, assignment, name, '**', '*'), recursive=True):
            if os.path.isfile(path):
                own.update(line.strip() for line in open(path, errors='replace'))
        text = feedback_text(me)
        leaked = [s for s in secrets_cache[key] - own if s in text]
        return f'{len(leaked)} solution-only line(s), e.g. {leaked[0][:50]!r}' if leaked else ''
    if kind == 'live_markup':
        outputs = [('feedback.html', me.get('html', '')), ('report.html', results.get('__report__', {}).get('html', ''))]
        outputs += render_markdown(me.get('md', ''))
        for where, text in outputs:
            for pat in LIVE_MARKUP:
                m = re.search(pat, text)
                if m:
                    return f'{where}: {m.group(0)[:40]!r}'
        return ''
    raise ValueError(kind)


# --------------------------------------------------------------------------- --dask
SCHED_PORT, DASH_PORT, WORKER_DASH = 48786, 48787, 48790   # the corpus's own ports (attacks touch no others)


def python_is_readable():
    """Can another uid run this Python (every folder above it searchable by others)?"""
    d = os.path.realpath(sys.executable)
    while d != '/':
        d = os.path.dirname(d)
        if not os.stat(d).st_mode & 0o001:
            return d
    return None


def reexec_with_readable_python():
    """The docs' fork-level cluster needs a Python installation other uids can run (the submission
    runs as a uid of its own). Where it sits under a folder only root enters (/root/.pyenv here),
    run the whole --dask mode in a private mount namespace in which that folder shows only the
    path to Python, searchable: what an operator's readable installation would be. Nothing outside
    this process tree sees the change."""
    closed = python_is_readable()
    if closed is None or os.environ.get('CHKATK_DASK_NS') or os.geteuid() != 0 or not shutil.which('unshare'):
        return
    rel = os.path.relpath(os.path.realpath(sys.executable), closed).split(os.sep)[0]
    view = tempfile.mkdtemp(prefix='chkatk-dask-view-')
    os.chmod(view, 0o755)
    os.mkdir(os.path.join(view, rel))
    script = (f'mount --bind {closed}/{rel} {view}/{rel} && mount --rbind {view} {closed} && '
              f'exec "$0" "$@"')
    env = dict(os.environ, CHKATK_DASK_NS='1')
    print(f'run_corpus: {closed} is closed to other uids: --dask runs in a mount namespace that opens {closed}/{rel}',
          file=sys.stderr)
    rc = subprocess.call(['unshare', '-m', '--propagation', 'private', 'sh', '-c', script,
                          sys.executable, *sys.argv], env=env)
    shutil.rmtree(view, ignore_errors=True)
    sys.exit(rc)


class Cluster:
    """A local Dask cluster as operators.md and server-deploy.md deploy it, on 127.0.0.1, with its
    workers at the fork level (no bwrap on their PATH, CHECKS_ISOLATION=fork). mode 'tls': the
    documented safe way (mutual TLS, keys 0600 root, the address in DASK_SCHEDULER_ADDRESS, no
    dashboard and the HTTP routes limited to the health check, as the compose file starts them);
    'tcp': the listed commands without TLS; 'argv': TLS with the address on the workers' command
    line; 'dash': TLS with the dashboards on, as `dask scheduler --port 8786` leaves them. The last
    three must be refused."""

    def __init__(self, checks, mode='tls', workers=2):
        self.mode, self.procs = mode, []
        self.tmp = tempfile.mkdtemp(prefix=f'chkatk-dask-{mode}-')
        venv_bin = os.path.dirname(checks)
        nobw = os.path.join(self.tmp, 'nobwrap')
        os.mkdir(nobw)
        for d in ('/usr/local/bin', '/usr/bin'):
            for name in os.listdir(d):
                if name != 'bwrap' and not os.path.exists(os.path.join(nobw, name)):
                    os.symlink(os.path.join(d, name), os.path.join(nobw, name))
        env = {k: v for k, v in os.environ.items() if not k.startswith(('DASK_', 'CHECKS_'))}
        env.update(PATH=f'{venv_bin}:{nobw}', CHECKS_ISOLATION='fork')
        # the keys and the course where student code at the fork level sees the file system as it is
        # (the compose file's /keys and /opt/checks/...; not /tmp, which each sandbox has of its own)
        self.home = tempfile.mkdtemp(prefix='.chkatk-dask-', dir=REPO)
        os.chmod(self.home, 0o755)
        self.course = os.path.join(self.home, 'course')   # the course only the grader's user may read
        os.mkdir(self.course, 0o700)
        for sub in ('assignments', 'autograder', 'solutions'):
            shutil.copytree(os.path.join(REPO, sub), os.path.join(self.course, sub),
                            ignore=shutil.ignore_patterns('__pycache__', '.ipynb_checkpoints'))
        proto = 'tcp' if mode == 'tcp' else 'tls'
        self.address = f'{proto}://127.0.0.1:{SCHED_PORT}'
        if proto == 'tls':
            keys = os.path.join(self.home, 'keys')
            subprocess.run([os.path.join(venv_bin, 'python'), '-m', 'checks.executors.cluster_keys', keys, '--owner', '0'],
                           check=True, capture_output=True, env=env)
            env.update(DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION='true',
                       DASK_DISTRIBUTED__COMM__TLS__CA_FILE=os.path.join(keys, 'ca.pem'))
            for role in ('SCHEDULER', 'WORKER', 'CLIENT'):
                env[f'DASK_DISTRIBUTED__COMM__TLS__{role}__CERT'] = os.path.join(keys, 'cert.pem')
                env[f'DASK_DISTRIBUTED__COMM__TLS__{role}__KEY'] = os.path.join(keys, 'key.pem')
        if mode != 'dash':
            env.update(DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES='["distributed.http.health"]',
                       DASK_DISTRIBUTED__WORKER__HTTP__ROUTES='["distributed.http.health"]')
        self.env = env
        self.key = _read(os.path.join(self.home, 'keys', 'key.pem')) if proto == 'tls' else ''
        dask = os.path.join(venv_bin, 'dask')
        dashboard = [] if mode == 'dash' else ['--no-dashboard']
        self._start([dask, 'scheduler', '--protocol', proto, '--host', '127.0.0.1', '--port', str(SCHED_PORT),
                     '--dashboard-address', f'127.0.0.1:{DASH_PORT}', *dashboard], 'scheduler')
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(('127.0.0.1', SCHED_PORT), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            self.stop()
            raise RuntimeError(f'the scheduler did not listen on {SCHED_PORT} (log: {self.tmp}/scheduler.log)')
        for i in range(workers):
            args = [dask, 'worker', '--nthreads', '1', '--host', '127.0.0.1',
                    '--dashboard-address', f'127.0.0.1:{WORKER_DASH + i}', *dashboard,
                    '--local-directory', os.path.join(self.tmp, f'scratch{i}')]
            wenv = dict(env)
            if mode == 'argv' or mode == 'tcp':
                args.insert(2, self.address)
            else:
                args[2:2] = ['--protocol', 'tls']
                wenv['DASK_SCHEDULER_ADDRESS'] = self.address
            self._start(args, f'worker{i}', wenv)
        time.sleep(8)

    def _start(self, args, name, env=None):
        log = open(os.path.join(self.tmp, name + '.log'), 'wb')
        self.procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env or self.env,
                                           cwd=self.tmp, start_new_session=True))

    def stop(self):
        for p in reversed(self.procs):   # workers first, then the scheduler; each its own session
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
        self.procs = []
        shutil.rmtree(self.home, ignore_errors=True)   # the keys and the course copy: never left in the repository

    def log_tail(self, name, n=400):
        return _read(os.path.join(self.tmp, name + '.log'))[-n:]


def dask_main(args, checks, listener):
    """Issue 49: the corpus's Dask attacks against a real local cluster at the fork level; then a
    LATER `checks grade` on the same cluster; then the configurations that must be refused."""
    rows, secrets_cache = [], {}
    busy = [p for p in (SCHED_PORT, DASH_PORT) if socket.socket().connect_ex(('127.0.0.1', p)) == 0]
    if busy:
        print(f'run_corpus: ports {busy} are in use: --dask needs them', file=sys.stderr)
        return rows, 2
    cluster = Cluster(checks, 'tls')
    try:
        for assignment in args.assignments:
            names = sorted(n for (a, n) in ATTACKS if a == assignment and
                           (ATTACKS[(a, n)].get('dask') or (a, n) in DASK_ALSO) and (not args.only or n in args.only))
            if not names:
                continue
            batch = run_batch(checks, assignment, 'fork', names, [], listener, args.timeout, args.keep, cluster, '-dask')
            rows += judge_batch(assignment, 'fork+dask', names, batch, secrets_cache, args.timeout)
        # a LATER, separate run on the same cluster: what the first left for it
        if '03_mlp' in args.assignments and (not args.only or 'zr_dask_persist_reader' in args.only):
            batch = run_batch(checks, '03_mlp', 'fork', ['zr_dask_persist_reader'], [], listener, args.timeout,
                              args.keep, cluster, '-dask-later')
            for r in judge_batch('03_mlp', 'fork+dask', ['zr_dask_persist_reader'], batch, secrets_cache, args.timeout):
                r['attack'] = r['attack'] + ' (later run)' if not r['attack'].startswith('(') else r['attack'] + ' (later run)'
                rows.append(r)
    finally:
        cluster.stop()
        if not args.keep:
            shutil.rmtree(cluster.tmp, ignore_errors=True)
    # configurations the docs say `checks grade --scheduler` refuses (exit status 2, nothing written)
    for mode in ([] if args.only else ['tcp', 'argv', 'dash']):
        c = Cluster(checks, mode)
        try:
            tmp = tempfile.mkdtemp(prefix=f'chkatk-dask-refuse-{mode}-')
            honest = os.path.join(tmp, 'zz_honest')
            honest_files('01_tensors', honest)
            try:
                p = subprocess.run([checks, 'grade', '01_tensors', honest, '--out', os.path.join(tmp, 'out'), '--course',
                                    c.course, '--scheduler', c.address], capture_output=True, env=c.env, timeout=180)
                rc, out = p.returncode, (p.stdout + p.stderr).decode('utf-8', 'replace')
            except subprocess.TimeoutExpired:
                rc, out = 'timeout', ''
            wrote = os.path.exists(os.path.join(tmp, 'out', 'gradebook.sqlite'))
            refused = rc == 2 and not wrote
            line = next((ln for ln in out.splitlines() if ln.lower().startswith('error')), out.strip()[-200:])
            rows.append(dict(assignment='(cluster)', attack=f'config_{mode}', cls='refusal', level='fork+dask', score='-',
                             result='held' if refused else 'BROKE',
                             why=(f'refused: {line}' if refused else f'graded on it (rc {rc}, gradebook written: {wrote})')))
            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            c.stop()
            if not args.keep:
                shutil.rmtree(c.tmp, ignore_errors=True)
    return rows, 0


def judge_batch(assignment, level, group, batch, secrets_cache, timeout):
    rows, blamed = [], False
    for name in group:
        score, reasons = judge(assignment, name, batch, secrets_cache)
        result = 'BROKE' if reasons else 'held'
        if batch['rc'] == 'timeout' and batch['results'].get(batch['graded_as'].get(name, name)) is None \
                and not ATTACKS[(assignment, name)].get('path_only'):
            if not blamed:
                reasons.append(f'grading did not end within {timeout} s (first submission left without a row)')
                result, blamed = 'BROKE', True
            else:
                result = 'not run'
        rows.append(dict(assignment=assignment, attack=name, cls=ATTACKS[(assignment, name)]['cls'],
                         level=level, score=score, result=result, why='; '.join(reasons)))
    honest = batch['results'].get('zz_honest')
    ok = honest is not None and honest.get('status') == 'graded' and abs((honest.get('score') or 0) - 100) < 1e-6
    if not ok and batch['rc'] != 'timeout':   # a killed batch is already blamed on its attack
        rows.append(dict(assignment=assignment, attack=f'(honest beside {group[0] if len(group) == 1 else "main"})',
                         cls='neighbour', level=level,
                         score='-' if honest is None else f"{honest.get('score') or 0:.1f}", result='BROKE',
                         why='the honest reference lost points or its row: ' + str((honest or {}).get('error') or '')[:100]))
    return rows


# --------------------------------------------------------------------------- main
def available_levels():
    levels = ['fork']
    if shutil.which('bwrap'):
        levels.insert(0, 'bwrap')
    return levels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--levels', nargs='+', default=None, help='bwrap fork (default: those this machine has)')
    ap.add_argument('--assignments', nargs='+', default=ASSIGNMENTS)
    ap.add_argument('--only', nargs='+', default=None, help='attack names to run (default: all)')
    ap.add_argument('--timeout', type=int, default=300, help='seconds for the main batch of an assignment')
    ap.add_argument('--solo-timeout', type=int, default=60, help='seconds for an attack graded alone (solo)')
    ap.add_argument('--no-client', action='store_true', help='skip the hostile-server attack on the student client')
    ap.add_argument('--keep', action='store_true', help='keep the temp folders (printed)')
    ap.add_argument('--json', help='also write the rows to this file')
    ap.add_argument('--dask', action='store_true',
                    help='issue 49: the Dask attacks against a local TLS cluster at the fork level (started and '
                         'stopped here, on 127.0.0.1:48786-48799), a later run on it, and the configurations '
                         'that must be refused; instead of the per-level batches')
    args = ap.parse_args()
    if args.dask:
        reexec_with_readable_python()
    checks = find_checks()
    levels = args.levels or available_levels()
    on_disk = {(a, n) for a in ASSIGNMENTS for n in (os.listdir(os.path.join(CORPUS, a)) if os.path.isdir(os.path.join(CORPUS, a)) else [])}
    missing = on_disk ^ set(ATTACKS)
    if missing:
        print(f'run_corpus: corpus and ATTACKS disagree on {sorted(missing)}', file=sys.stderr)
        return 2
    listener = Listener()
    if listener.ok:
        listener.start()
    else:
        print(f'run_corpus: port {NET_PORT} busy: the network check cannot see hits', file=sys.stderr)
    rows, secrets_cache, broke_any = [], {}, False
    t_start = time.time()
    if args.dask:
        rows, rc = dask_main(args, checks, listener)
        if rc:
            return rc
        broke_any = any(r['result'] == 'BROKE' for r in rows)
        levels, args.no_client = [], True
    for level in levels:
        for assignment in args.assignments:
            names = sorted(n for (a, n) in ATTACKS if a == assignment and (not args.only or n in args.only))
            if not names:
                continue
            all_controls = sorted(os.listdir(os.path.join(CONTROLS, assignment)))
            groups = [([n for n in names if not ATTACKS[(assignment, n)].get('solo')], all_controls, args.timeout)]
            for n in names:
                if ATTACKS[(assignment, n)].get('solo'):
                    wanted = sorted({arg for kind, arg in ATTACKS[(assignment, n)]['checks'] if kind == 'above_control'})
                    groups.append(([n], wanted, max(args.solo_timeout, ATTACKS[(assignment, n)].get('timeout', 0))))
            for group, controls, timeout in groups:
                if not group:
                    continue
                batch = run_batch(checks, assignment, level, group, controls, listener, timeout, args.keep)
                print(f'# {assignment} at {level} {group if len(group) == 1 else "(main)"}: rc {batch["rc"]}, '
                      f'{batch["wall"]:.0f} s' + (f', kept in {batch["tmp"]}' if args.keep else ''), file=sys.stderr, flush=True)
                if batch['rc'] not in (0, 1) or len(batch['results']) <= 2:
                    tail = batch['stdout'][-600:].decode('utf-8', 'replace')
                    print(f'run_corpus: the batch did not end cleanly (rc {batch["rc"]}):\n{tail}', file=sys.stderr)
                blamed = False
                for name in group:
                    score, reasons = judge(assignment, name, batch, secrets_cache)
                    result = 'BROKE' if reasons else 'held'
                    if batch['rc'] == 'timeout' and batch['results'].get(batch['graded_as'].get(name, name)) is None \
                            and not ATTACKS[(assignment, name)].get('path_only'):
                        if not blamed:
                            reasons.append(f'grading did not end within {timeout} s (first submission left without a row)')
                            result, blamed = 'BROKE', True
                        else:
                            result = 'not run'
                    rows.append(dict(assignment=assignment, attack=name, cls=ATTACKS[(assignment, name)]['cls'],
                                     level=level, score=score, result=result, why='; '.join(reasons)))
                    broke_any |= result == 'BROKE'
                honest = batch['results'].get('zz_honest')
                ok = honest is not None and honest.get('status') == 'graded' and abs((honest.get('score') or 0) - 100) < 1e-6
                if not ok and batch['rc'] != 'timeout':   # a killed batch is already blamed on its attack
                    rows.append(dict(assignment=assignment, attack=f'(honest beside {group[0] if len(group) == 1 else "main"})',
                                     cls='neighbour', level=level,
                                     score='-' if honest is None else f"{honest.get('score') or 0:.1f}", result='BROKE',
                                     why='the honest reference lost points or its row'))
                    broke_any = True
    if not args.no_client and not args.only:
        sys.path.insert(0, HERE)
        import client_attack
        try:
            for attack, result, why in client_attack.main(checks):
                rows.append(dict(assignment='(client)', attack=attack, cls='client', level='-', score='-',
                                 result=result, why=why))
                broke_any |= result == 'BROKE'
        except Exception as e:
            print(f'run_corpus: the client attack could not run: {e!r}', file=sys.stderr)
    width = max(len(r['attack']) for r in rows) if rows else 10
    print(f"{'assignment':<12} {'attack':<{width}} {'class':<12} {'level':<6} {'score':>6}  result  why")
    for r in rows:
        print(f"{r['assignment']:<12} {r['attack']:<{width}} {r['cls']:<12} {r['level']:<6} {r['score']:>6}  "
              f"{r['result']:<6}  {r['why'][:150]}")
    n_broke = sum(r['result'] == 'BROKE' for r in rows)
    print(f'{n_broke} of {len(rows)} rows broke; {time.time() - t_start:.0f} s')
    if args.json:
        with open(args.json, 'w') as fh:
            json.dump(rows, fh, indent=1)
    return 1 if broke_any else 0


if __name__ == '__main__':
    sys.exit(main())
