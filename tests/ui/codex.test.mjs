// "Sign in with ChatGPT" (provider `codex`) on the Settings page and the setup page, against a
// real `souz serve` and a fake of OpenAI's sign-in service speaking its wire format (device
// code, 403 while pending, the authorization code, the token exchange): the code and the link
// are shown, the card turns to "signed in" with the account once the code is entered, and Sign
// out forgets it.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startSession, waitFor } from "./harness.mjs";

let auth, session;

/** An unsigned JWT with `claims` as its payload. */
const jwt = (claims) => `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.`;

/** The sign-in service: a code; `pending` polls answer 403, then the authorization code. */
async function startFakeAuth() {
  const state = { pending: 2, polls: 0 };
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => { body += chunk; });
    request.on("end", () => {
      const json = (status, value) => {
        response.writeHead(status, { "Content-Type": "application/json" });
        response.end(JSON.stringify(value));
      };
      if (request.url === "/api/accounts/deviceauth/usercode") return json(200, { device_auth_id: "dev-ui", user_code: "UIUI-2468", interval: "0" });
      if (request.url === "/api/accounts/deviceauth/token") {
        state.polls += 1;
        if (state.pending > 0) { state.pending -= 1; return json(403, { error: { message: "pending" } }); }
        return json(200, { authorization_code: "code-ui", code_challenge: "c", code_verifier: "v" });
      }
      if (request.url === "/oauth/token") {
        const auth = { chatgpt_account_id: "acct-ui" };
        return json(200, {
          id_token: jwt({ email: "ui@example.com", "https://api.openai.com/auth": auth }),
          access_token: jwt({ exp: Math.floor(Date.now() / 1000) + 3600, "https://api.openai.com/auth": auth }),
          refresh_token: "rt-ui",
        });
      }
      json(404, { error: "not here" });
    });
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return { state, url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((done) => server.close(done)) };
}

before(async () => {
  auth = await startFakeAuth();
  session = await startSession({}, { config: `[llm]\ncodex_auth_url = "${auth.url}"\n` });
});

after(async () => {
  await session?.close();
  await auth?.close();
});

test("Settings signs in with ChatGPT: code and link shown, then signed in; sign out forgets it", async () => {
  const tab = await session.page("/settings/model", { height: 1400 });
  await tab.waitForSelector("#settings-chatgpt-start");
  await tab.click("#settings-chatgpt-start");
  await tab.waitForSelector("#settings-chatgpt-code");
  assert.equal((await tab.textContent("#settings-chatgpt-code")).trim(), "UIUI-2468");
  assert.equal(await tab.getAttribute("#settings-chatgpt-link", "href"), `${auth.url}/codex/device`);
  await tab.waitForSelector('#settings-chatgpt-state[data-state="signed_in"]', { timeout: 15000 });
  assert.match(await tab.textContent("#settings-chatgpt-state"), /Signed in to ChatGPT \(Codex\) as ui@example\.com/);
  assert.ok(auth.state.polls >= 3, `polled ${auth.state.polls} times`);
  const page = await tab.content();
  assert.ok(!page.includes("rt-ui"), "no token reaches the page");
  const { body } = await session.api("GET", "/v1/me/provider-logins/codex");
  assert.equal(body.state, "signed_in");

  await tab.click("#settings-chatgpt-sign-out");
  await tab.waitForSelector('#settings-chatgpt-state[data-state="signed_out"]', { state: "attached" });
  assert.equal((await tab.textContent("#settings-chatgpt-note")).trim(), "Signed out of ChatGPT.");
  await tab.waitForSelector("#settings-chatgpt-start");
  await waitFor(async () => (await session.api("GET", "/v1/me/provider-logins/codex")).body.state === "signed_out", "signed out");
  await tab.context().close();
});

test("the setup page offers the same sign-in; the card speaks Russian too", async () => {
  const tab = await session.page("/setup");
  await tab.waitForSelector("#setup-chatgpt-start");
  assert.equal((await tab.textContent("#setup-chatgpt-start")).trim(), "Sign in with ChatGPT");
  await tab.evaluate(() => { localStorage.setItem("souz.lang", "ru"); location.hash = "#/settings/model"; });
  await tab.waitForSelector("#settings-chatgpt-start");
  await waitFor(async () => (await tab.textContent("#settings-chatgpt-start")).trim() === "Войти через ChatGPT", "the Russian button");
  await tab.evaluate(() => localStorage.removeItem("souz.lang"));
  await tab.context().close();
});
