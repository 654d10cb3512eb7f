// peer.mjs - the peer reconciler of hack/bench-peer.sh: what a platform
// engineer writes in a day with the official E2B JS SDK (the `e2b` npm
// package, version pinned in package.json). A poll loop: every pass reads
// all sessions with `sessionctl get sessions -A -o json`, lists its
// sandboxes with Sandbox.list (metadata query, every page), then creates,
// pauses, resumes and kills with at most --inflight calls in flight, and
// sleeps until the next pass is due (a pass that overruns the interval is
// followed at once by the next).
//
// Desired state from spec.state: Active or Running -> a sandbox (created
// with the template, the tags lea.session_id, lea.tenant_id,
// lea.managed-by, lea.session_uid, lea.template, timeout spec.idleTimeout,
// pause on timeout, auto-resume unless resumePolicy OnConnect); Running
// also resumes a paused sandbox (Sandbox.connect); Paused -> pause a
// running one; Ended -> kill. A second sandbox of one session and a
// sandbox of ours whose session is gone are killed. It writes no status.
//
// Usage: node peer.mjs --store URL --sessionctl PATH --api-url URL
//        [--interval SECONDS] [--inflight N] [--name NAME] [--once]
// The API key comes from E2B_API_KEY (cubesim without --api-key takes
// any). One JSON line per pass on stdout:
// {"pass", "startMs", "readMs", "listMs", "actMs", "totalMs", "sessions",
//  "sandboxes", "create", "pause", "resume", "kill", "errors"}
// (startMs is the wall clock in ms; the others are durations). Exits 0 on
// SIGTERM/SIGINT, 2 on a bad command line.
import { execFile } from 'node:child_process';
import { Sandbox } from 'e2b';

function usage(msg) {
  process.stderr.write(`peer: ${msg}\nusage: node peer.mjs --store URL --sessionctl PATH --api-url URL [--interval SECONDS] [--inflight N] [--name NAME] [--once]\n`);
  process.exit(2);
}

const opt = { interval: 5, inflight: 32, name: 'bench-peer', once: false };
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const k = a[i];
    const v = () => { if (i + 1 >= a.length) usage(`${k} needs a value`); return a[++i]; };
    switch (k) {
      case '--store': opt.store = v(); break;
      case '--sessionctl': opt.sessionctl = v(); break;
      case '--api-url': opt.apiUrl = v(); break;
      case '--interval': opt.interval = Number(v()); break;
      case '--inflight': opt.inflight = Number(v()); break;
      case '--name': opt.name = v(); break;
      case '--once': opt.once = true; break;
      default: usage(`unknown argument ${k}`);
    }
  }
  if (!opt.store || !opt.sessionctl || !opt.apiUrl) usage('--store, --sessionctl and --api-url are required');
  if (!(opt.interval >= 0)) usage('--interval: want a number of seconds >= 0');
  if (!(Number.isInteger(opt.inflight) && opt.inflight >= 1)) usage('--inflight: want an integer >= 1');
}

const conn = {
  apiKey: process.env.E2B_API_KEY || 'peer-bench-key',
  apiUrl: opt.apiUrl,
  requestTimeoutMs: 30000,
};

// "15m", "1h30m", "90s", "500ms" -> ms (the Session API's durations)
function durationMs(s, dflt) {
  if (typeof s !== 'string' || s === '') return dflt;
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let ms = 0, m, used = 0;
  while ((m = re.exec(s)) !== null) {
    ms += Number(m[1]) * { ms: 1, s: 1000, m: 60000, h: 3600000 }[m[2]];
    used += m[0].length;
  }
  return used === s.length ? ms : dflt;
}

let child = null; // the sessionctl of the current pass, killed on SIGTERM
function readSessions() {
  return new Promise((resolve, reject) => {
    child = execFile(opt.sessionctl, ['--store', opt.store, 'get', 'sessions', '-A', '-o', 'json'],
      { maxBuffer: 1 << 30 }, (err, stdout, stderr) => {
        child = null;
        if (err) return reject(new Error(`sessionctl get: ${err.message} ${stderr}`));
        try { resolve(JSON.parse(stdout).items || []); } catch (e) { reject(new Error(`sessionctl get: bad JSON: ${e.message}`)); }
      });
  });
}

async function listSandboxes() {
  const out = [];
  const p = Sandbox.list({ ...conn, query: { metadata: { 'lea.managed-by': opt.name } }, limit: 100 });
  while (p.hasNext) out.push(...await p.nextItems());
  return out;
}

async function pool(tasks, n) {
  let next = 0, errors = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const t = tasks[next++];
      try { await t(); } catch (e) {
        errors++;
        if (errors <= 5) process.stderr.write(`peer: ${e.message}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, tasks.length) }, worker));
  return errors;
}

let passNo = 0;
async function pass() {
  const t0 = Date.now();
  const sessions = await readSessions();
  const t1 = Date.now();
  const sandboxes = await listSandboxes();
  const t2 = Date.now();

  const bySession = new Map();
  for (const sb of sandboxes) {
    const k = `${sb.metadata['lea.tenant_id']}/${sb.metadata['lea.session_id']}`;
    if (!bySession.has(k)) bySession.set(k, []);
    bySession.get(k).push(sb);
  }
  const tasks = [];
  const n = { create: 0, pause: 0, resume: 0, kill: 0 };
  const kill = (sb) => { n.kill++; tasks.push(() => Sandbox.kill(sb.sandboxId, conn)); };
  for (const s of sessions) {
    const spec = s.spec || {};
    const md = s.metadata || {};
    const sid = spec.sessionID || md.name;
    const tenant = spec.tenantID || md.namespace || 'default';
    const k = `${tenant}/${sid}`;
    const have = bySession.get(k) || [];
    bySession.delete(k);
    const state = spec.state || 'Active';
    if (state === 'Ended') { have.forEach(kill); continue; }
    // keep one sandbox (a running one first), kill the rest
    have.sort((a, b) => (a.state === 'running' ? 0 : 1) - (b.state === 'running' ? 0 : 1));
    const [sb, ...extra] = have;
    extra.forEach(kill);
    if (state === 'Paused') {
      if (sb && sb.state === 'running') {
        n.pause++;
        tasks.push(() => Sandbox.pause(sb.sandboxId, conn));
      }
      continue;
    }
    if (!sb) {
      n.create++;
      const metadata = {
        ...(spec.sandboxMetadata || {}),
        'lea.session_id': sid, 'lea.tenant_id': tenant, 'lea.managed-by': opt.name,
        'lea.template': spec.template,
      };
      if (md.uid) metadata['lea.session_uid'] = md.uid;
      tasks.push(() => Sandbox.create(spec.template, {
        ...conn, metadata, envs: spec.envVars || {},
        timeoutMs: durationMs(spec.idleTimeout, 15 * 60000),
        lifecycle: { onTimeout: 'pause', autoResume: spec.resumePolicy !== 'OnConnect' },
      }));
    } else if (sb.state === 'paused' && state === 'Running') {
      n.resume++;
      tasks.push(() => Sandbox.connect(sb.sandboxId, { ...conn, timeoutMs: durationMs(spec.idleTimeout, 15 * 60000) }));
    }
  }
  for (const rest of bySession.values()) rest.forEach(kill);
  const errors = await pool(tasks, opt.inflight);
  const t3 = Date.now();
  passNo++;
  process.stdout.write(JSON.stringify({
    pass: passNo, startMs: t0, readMs: t1 - t0, listMs: t2 - t1, actMs: t3 - t2, totalMs: t3 - t0,
    sessions: sessions.length, sandboxes: sandboxes.length, ...n, errors,
  }) + '\n');
}

let stopping = false;
const stop = () => { stopping = true; if (child) child.kill(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

while (!stopping) {
  const start = Date.now();
  try { await pass(); } catch (e) { process.stderr.write(`peer: pass failed: ${e.message}\n`); }
  if (opt.once) break;
  const wait = opt.interval * 1000 - (Date.now() - start);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}
