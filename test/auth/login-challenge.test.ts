import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_SUPER_ADMIN, useTestServer } from '../helpers/server.js';
import { sendJson, tokenRequest } from './helpers.js';

/**
 * The PKCE methods of `POST /auth/login`: S256, and `plain`, which Medplum's client falls back to
 * where it cannot hash (outside browsers). `/oauth2/authorize` keeps to S256 (SMART App Launch).
 */

const api = await useTestServer();
const verifier = () => randomBytes(48).toString('base64url');

const login = (body: Record<string, unknown>) =>
  sendJson(api, 'POST', '/auth/login', { email: TEST_SUPER_ADMIN.email, password: TEST_SUPER_ADMIN.password, ...body });

describe('POST /auth/login code challenges', () => {
  it('binds the code to a plain challenge: only that verifier gets the tokens', async () => {
    const plain = verifier();
    const res = await login({ codeChallenge: plain, codeChallengeMethod: 'plain' });
    expect(res.status).toBe(200);
    const wrong = await tokenRequest(api, { grant_type: 'authorization_code', code: res.body.code, code_verifier: verifier() });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    const tokens = await tokenRequest(api, { grant_type: 'authorization_code', code: res.body.code, code_verifier: plain });
    expect(tokens.status).toBe(200);
    expect(tokens.body.access_token).toEqual(expect.any(String));
  });

  it('refuses a plain code exchange without its verifier', async () => {
    const res = await login({ codeChallenge: verifier(), codeChallengeMethod: 'plain' });
    const tokens = await tokenRequest(api, { grant_type: 'authorization_code', code: res.body.code });
    expect(tokens.status).toBe(400);
    expect(tokens.body.error).toBe('invalid_request');
  });

  it('refuses a plain challenge that is no valid code verifier (too short) with 400', async () => {
    const res = await login({ codeChallenge: 'short', codeChallengeMethod: 'plain' });
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].details.text).toContain('43 to 128');
  });

  it('refuses an unknown challenge method with 400 naming the allowed ones', async () => {
    const res = await login({ codeChallenge: verifier(), codeChallengeMethod: 'S512' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toBe('codeChallengeMethod must be S256 or plain');
  });

  it('keeps /oauth2/authorize to S256: a plain challenge is sent back as invalid_request', async () => {
    const admin = api.newProject();
    const app = await admin.post('/ClientApplication', { resourceType: 'ClientApplication', name: 'app', redirectUri: 'https://app.example/cb' });
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: app.body.id,
      redirect_uri: 'https://app.example/cb',
      code_challenge: createHash('sha256').update(verifier()).digest('base64url'),
      code_challenge_method: 'plain',
    });
    const res = await api.raw(`/oauth2/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
  });
});
