// A real OpenID provider for the sign-in tests: panva's oidc-provider (OpenID Certified), run as
// its own process on a free loopback port by tests/oidc/provider.py.
//
//   node provider.mjs CONFIG.json
//
// CONFIG names the clients ({client_id, client_secret, redirect_uris, post_logout_redirect_uris})
// and the users ({name: {password, email, name, groups}}). Once listening it prints one JSON line,
// {"issuer": "http://127.0.0.1:PORT"}, on stdout. What the provider's configuration would leave
// to a product (the login page, consent, the logout page) is the smallest thing that works:
// a username/password form, consent granted for the client's first-party scopes, plain pages
// with nothing loaded from elsewhere. PKCE is required of every client.
//
// GET /_test/authorizations answers the authorization requests it received (their query
// parameters), so a test can check what the relying party sent (e.g. code_challenge).

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const users = config.users;
const authorizations = [];

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, body) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>`
    + `</head><body><main><h1>${escape(title)}</h1>${body}</main></body></html>`;
}

function loginForm(uid, clientName, error = '') {
  return page('Test identity provider: sign in', `
    <p>Signing in to ${escape(clientName)}.</p>
    ${error ? `<p role="alert" id="idp-error">${escape(error)}</p>` : ''}
    <form method="post" action="/interaction/${escape(uid)}/login" autocomplete="off">
      <label>Username <input id="idp-username" name="username" required></label>
      <label>Password <input id="idp-password" name="password" type="password" required></label>
      <button id="idp-submit" type="submit">Sign in at the provider</button>
    </form>`);
}

async function readForm(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

const server = createServer();
await new Promise((resolve) => { server.listen(0, '127.0.0.1', resolve); });
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-signing-key', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...client,
  })),
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username'],
    groups: ['groups'],
  },
  async findAccount(ctx, id) {
    const user = users[id];
    if (!user) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          preferred_username: id,
          email: user.email,
          email_verified: true,
          name: user.name,
          given_name: user.given_name,
          family_name: user.family_name,
          groups: user.groups,
        };
      },
    };
  },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = page('Sign out of the test identity provider?', `${form}
          <button id="idp-logout" type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button>
          <button type="submit" form="op.logoutForm">No, stay signed in</button>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('Signed out of the test identity provider', '<p>You are signed out.</p>');
      },
    },
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Test identity provider: error',
      Object.entries(out).map(([key, value]) => `<p>${escape(key)}: ${escape(value)}</p>`).join(''));
  },
});

provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path === '/_test/authorizations') {
    ctx.body = authorizations;
    return;
  }
  if (ctx.path === '/auth') authorizations.push({ ...ctx.query });

  const match = ctx.path.match(/^\/interaction\/([^/]+)(\/login)?$/);
  if (!match) {
    await next();
    return;
  }
  const interaction = await provider.interactionDetails(ctx.req, ctx.res);
  const clientName = interaction.params.client_id;
  ctx.set('Cache-Control', 'no-store');

  if (interaction.prompt.name === 'login') {
    if (ctx.method === 'POST' && match[2]) {
      const form = await readForm(ctx.req);
      const username = form.get('username') || '';
      const user = users[username];
      if (!user || user.password !== form.get('password')) {
        ctx.type = 'html';
        ctx.body = loginForm(interaction.uid, clientName, 'Wrong username or password.');
        return;
      }
      ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, {
        login: { accountId: username },
      }, { mergeWithLastSubmission: false }));
      return;
    }
    ctx.type = 'html';
    ctx.body = loginForm(interaction.uid, clientName);
    return;
  }

  // Consent: the portal is a first-party client, so what it asks for is granted.
  const { details } = interaction.prompt;
  const grant = interaction.grantId
    ? await provider.Grant.find(interaction.grantId)
    : new provider.Grant({ accountId: interaction.session.accountId, clientId: interaction.params.client_id });
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(details.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, {
    consent: interaction.grantId ? {} : { grantId },
  }, { mergeWithLastSubmission: true }));
});

server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => { server.close(); process.exit(0); });
}
