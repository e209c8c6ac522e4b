// One of the server scripts of bench/ts/ as N processes under Node's `cluster` module: `ts-v2` with workers in
// bench/ (http_load.py --workers N, workers.py).
//
//   node cluster.mjs --workers N v2_server.mjs http PORT [--catalog]
//   CLUSTER_WORKERS=N node cluster.mjs v2_server.mjs http PORT [--catalog]
//
// The primary forks N workers (cluster.fork: this file again, with the same arguments); each worker rewrites
// process.argv to what the server script expects (`node v2_server.mjs http PORT [--catalog]`) and imports the
// script (a relative name: next to this file), whose server.listen(PORT) then shares the one listening socket
// that the primary holds, as Node's cluster does (scheduling: Node's default, round-robin on Linux: the primary
// accepts and hands each connection to a worker in turn; NODE_CLUSTER_SCHED_POLICY=none lets the workers accept
// on the shared socket themselves, as uvicorn's do).
// The primary serves nothing and restarts nothing: on SIGTERM or SIGINT it sends SIGTERM to its workers (the
// scripts' listenUntilStopped closes and exits; SIGKILL after 5 s) and exits 0 once they are gone; if a worker
// exits on its own, the primary stops the others and exits 1 (a benchmark never runs short of a worker).
// Plain ESM, no dependencies.

import cluster from 'node:cluster';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const USAGE = 'usage: node cluster.mjs [--workers N] SCRIPT http PORT [--catalog]  (or CLUSTER_WORKERS=N)\n';

function parse(argv) {
    let args = argv.slice(2);
    let workers = process.env.CLUSTER_WORKERS;
    if (args[0] === '--workers') {
        workers = args[1];
        args = args.slice(2);
    } else if (args[0]?.startsWith('--workers=')) {
        workers = args[0].slice('--workers='.length);
        args = args.slice(1);
    }
    const count = Number(workers);
    if (!Number.isInteger(count) || count < 1 || args.length < 1) {
        process.stderr.write(USAGE);
        process.exit(2);
    }
    const here = dirname(fileURLToPath(import.meta.url));
    const script = isAbsolute(args[0]) ? args[0] : resolve(here, args[0]);
    return { count, script, rest: args.slice(1) };
}

const { count, script, rest } = parse(process.argv);

if (cluster.isPrimary) {
    let stopping = false;
    const stop = (code) => {
        if (stopping) {
            return;
        }
        stopping = true;
        const alive = Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());
        if (alive.length === 0) {
            process.exit(code);
        }
        for (const worker of alive) {
            worker.process.kill('SIGTERM');
        }
        const force = setTimeout(() => {
            for (const worker of Object.values(cluster.workers ?? {})) {
                if (worker && !worker.isDead()) {
                    worker.process.kill('SIGKILL');
                }
            }
            process.exit(code);
        }, 5000);
        cluster.on('exit', () => {
            if (Object.values(cluster.workers ?? {}).every((w) => !w || w.isDead())) {
                clearTimeout(force);
                process.exit(code);
            }
        });
    };
    cluster.on('exit', (worker, code, signal) => {
        if (!stopping) {
            process.stderr.write(
                `cluster.mjs: worker ${worker.process.pid} exited (${signal ?? code}); stopping the others\n`,
            );
            stop(1);
        }
    });
    process.on('SIGTERM', () => stop(0));
    process.on('SIGINT', () => stop(0));
    for (let i = 0; i < count; i++) {
        cluster.fork();
    }
} else {
    // What the script reads: `node SCRIPT http PORT [--catalog]`.
    process.argv = [process.argv[0], script, ...rest];
    await import(pathToFileURL(script).href);
}
