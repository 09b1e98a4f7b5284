// A small authenticating reverse proxy for clients that cannot send headers (the MCP
// conformance suite): adds `Authorization: Bearer <token>` and forwards everything else
// unchanged, streaming both ways. Its own address in `Host`/`Origin` becomes the daemon's (as
// any reverse proxy does); every other Host/Origin reaches the daemon untouched, so the
// daemon's DNS-rebinding checks see what the client sent.
//
// Usage: node auth-proxy.mjs UPSTREAM_HOST:PORT TOKEN   (prints "listening PORT" when ready)
import http from 'node:http';

const [upstream, token] = process.argv.slice(2);
if (!upstream || !token) {
  console.error('usage: node auth-proxy.mjs UPSTREAM_HOST:PORT TOKEN');
  process.exit(2);
}
const [upstreamHost, upstreamPort] = upstream.split(':');

const server = http.createServer((request, response) => {
  const port = server.address().port;
  const own = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  const headers = { ...request.headers, authorization: `Bearer ${token}` };
  if (own.has(headers.host)) {
    headers.host = headers.host.replace(`:${port}`, `:${upstreamPort}`);
  }
  if (headers.origin && own.has(headers.origin.replace(/^https?:\/\//, ''))) {
    headers.origin = headers.origin.replace(`:${port}`, `:${upstreamPort}`);
  }
  const forwarded = http.request(
    { host: upstreamHost, port: Number(upstreamPort), method: request.method, path: request.url, headers },
    (answer) => {
      response.writeHead(answer.statusCode, answer.headers);
      answer.pipe(response);
    },
  );
  forwarded.on('error', (error) => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(`proxy: ${error.message}`);
  });
  // A client that goes away ends the upstream request too (cancellation by disconnect).
  response.on('close', () => forwarded.destroy());
  request.pipe(forwarded);
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
