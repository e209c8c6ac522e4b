// The tools every benchmark server serves, registered the same way on both TypeScript SDKs (their
// `McpServer.registerTool` takes the same config in v1 and v2: zod 4 object schemas).
//
// word_count(text: string) -> {words, chars}: an outputSchema, and a result with structuredContent plus the
// same JSON as text (examples/word_count.py, bench/servers.py). With `catalog`, 499 more tools
// lookup_NNN(key: string, limit: int = 10) -> string, as bench.servers registers them in the Python frameworks.

import * as z from 'zod';

export const CATALOG_SIZE = 500;

const wordCountInput = z.object({ text: z.string() });
const wordCountOutput = z.object({ words: z.number().int(), chars: z.number().int() });
const lookupInput = z.object({ key: z.string(), limit: z.number().int().default(10) });

/** Count the words (runs of non-whitespace, as Python's str.split()) and the characters (code points). */
function countWords(text) {
    const trimmed = text.trim();
    return { words: trimmed === '' ? 0 : trimmed.split(/\s+/).length, chars: [...text].length };
}

export function registerTools(server, catalog = false) {
    server.registerTool(
        'word_count',
        {
            title: 'Word count',
            description: 'Count the words and characters in a text.',
            inputSchema: wordCountInput,
            outputSchema: wordCountOutput,
            annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
        },
        async ({ text }) => {
            const counts = countWords(text);
            return { content: [{ type: 'text', text: JSON.stringify(counts) }], structuredContent: counts };
        },
    );
    if (!catalog) {
        return server;
    }
    for (let i = 1; i < CATALOG_SIZE; i++) {
        const name = `lookup_${String(i).padStart(3, '0')}`;
        server.registerTool(
            name,
            {
                description: `Look up a key in table ${name.slice(-3)} and return at most \`limit\` rows.`,
                inputSchema: lookupInput,
                annotations: { readOnlyHint: true },
            },
            async ({ key, limit }) => ({ content: [{ type: 'text', text: `${name}:${key}:${limit}` }] }),
        );
    }
    return server;
}

/**
 * The command line every server script takes: `http [PORT] [--catalog]` or `stdio [--catalog]`. PORT may also
 * come from the environment (`PORT`).
 */
export function parseArgs(argv, usage) {
    const args = argv.slice(2);
    const catalog = args.includes('--catalog');
    const [mode, portArg] = args.filter((a) => a !== '--catalog');
    const port = Number(portArg ?? process.env.PORT);
    if (mode === 'stdio' || (mode === 'http' && Number.isInteger(port) && port > 0)) {
        return { mode, port, catalog };
    }
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
}

/** Listen on 127.0.0.1:`port`; on SIGTERM or SIGINT, close every connection and exit. */
export function listenUntilStopped(server, port) {
    server.listen(port, '127.0.0.1');
    const shutdown = () => {
        server.close();
        server.closeAllConnections();
        process.exit(0);
    };
    process.on('SIGTERM', shutdown);
    process.on('SIGINT', shutdown);
}
