// @ts-check
// A git smart-HTTP server for UI tests: `git http-backend` (CGI/1.1) behind a loopback Node
// server, serving the bare repositories under a folder; and a helper that makes one.

import { createServer } from "node:http";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** Starts the server over the bare repositories in `root`; its base URL and `close()`.
 *  @param {string} root */
export async function startGitServer(root) {
  const server = createServer((request, response) => {
    /** @type {Buffer[]} */
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      // Through a proxy the target may be in absolute form.
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      const header = (/** @type {string} */ name) => String(request.headers[name] ?? "");
      const child = spawn("git", ["http-backend"], {
        env: {
          PATH: process.env.PATH, GIT_PROJECT_ROOT: root, GIT_HTTP_EXPORT_ALL: "1",
          REQUEST_METHOD: request.method, PATH_INFO: url.pathname, QUERY_STRING: url.search.slice(1),
          CONTENT_TYPE: header("content-type"), CONTENT_LENGTH: String(body.length),
          HTTP_CONTENT_ENCODING: header("content-encoding"), GIT_PROTOCOL: header("git-protocol"),
          REMOTE_ADDR: "127.0.0.1",
        },
      });
      /** @type {Buffer[]} */
      const out = [];
      child.stdout.on("data", (chunk) => out.push(chunk));
      child.on("close", () => {
        const all = Buffer.concat(out);
        let end = all.indexOf("\r\n\r\n");
        let skip = 4;
        if (end < 0) { end = all.indexOf("\n\n"); skip = 2; }
        let status = 200;
        /** @type {Record<string, string>} */
        const headers = {};
        for (const line of all.subarray(0, Math.max(end, 0)).toString("latin1").split(/\r?\n/)) {
          const colon = line.indexOf(":");
          if (colon < 0) continue;
          const name = line.slice(0, colon).trim();
          const value = line.slice(colon + 1).trim();
          if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 500;
          else headers[name] = value;
        }
        response.writeHead(status, headers);
        response.end(end < 0 ? all : all.subarray(end + skip));
      });
      child.stdin.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    base: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve(undefined)); }),
  };
}

/** Makes the bare repository `<root>/<name>.git` with `files` (path → text) in one commit on
 *  `main`, built in the work folder `work`.
 *  @param {string} root @param {string} work @param {string} name @param {Record<string, string>} files */
export function publishRepository(root, work, name, files) {
  const tree = join(work, name);
  const git = (/** @type {string[]} */ ...args) => execFileSync("git", ["-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", ...args], {
    cwd: tree,
    env: {
      PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "Tester", GIT_AUTHOR_EMAIL: "tester@example.com",
      GIT_COMMITTER_NAME: "Tester", GIT_COMMITTER_EMAIL: "tester@example.com",
    },
  });
  mkdirSync(tree, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), text);
  }
  git("init", "--quiet");
  git("add", "--all");
  git("commit", "--quiet", "-m", "skills");
  git("clone", "--quiet", "--bare", tree, join(root, `${name}.git`));
}
