// The Node client against the contract as shipped, without a Tandem server: the protos load,
// the GatewayService client has every RPC, and a call carries the API key as
// `authorization: Bearer …` and decodes the reply (checked against an in-process server
// built from the same protos).
'use strict';

const assert = require('node:assert/strict');
const { test } = require('node:test');
const grpc = require('@grpc/grpc-js');

const { loadGateway, createClient, search, ask, toPlain } = require('../client.js');

const RPCS = [
  'Ask',
  'StreamAsk',
  'Search',
  'AskSql',
  'RunSqlIntent',
  'ValidateSql',
  'IngestDocuments',
  'UploadDocument',
  'DeleteDocument',
  'UpdateDocumentAcl',
  'DescribeSchema',
  'SubmitSqlFeedback',
  'TeachSql',
  'ListConfirmedPairs',
  'DeleteConfirmedPair',
  'ListConversations',
  'DeleteConversation',
  'ListAuditEvents',
  'GetCaller',
];

test('the protos load and GatewayService has every RPC with its shape', () => {
  const { GatewayService } = loadGateway();
  const service = GatewayService.service;
  assert.deepEqual(Object.keys(service).sort(), [...RPCS].sort());
  for (const name of RPCS) {
    assert.equal(service[name].path, `/tandem.v1.GatewayService/${name}`);
  }
  assert.equal(service.StreamAsk.responseStream, true);
  assert.equal(service.IngestDocuments.responseStream, true);
  assert.equal(service.UploadDocument.requestStream, true);
  assert.equal(service.UploadDocument.responseStream, true);
  assert.equal(service.Ask.responseStream, false);
  assert.equal(service.Search.requestStream, false);

  const client = createClient('127.0.0.1:1');
  try {
    for (const name of RPCS) {
      assert.equal(typeof client[name], 'function', name);
    }
  } finally {
    client.close();
  }
});

test('request messages have no tenant field: the tenant comes from the key', () => {
  const { definition } = loadGateway();
  for (const name of ['GatewayServiceAskRequest', 'GatewayServiceSearchRequest']) {
    const fields = definition[`tandem.v1.${name}`].type.field.map((f) => f.name);
    assert.ok(!fields.includes('tenant_id'), name);
  }
  const ask = definition['tandem.v1.GatewayServiceAskRequest'].type.field.map((f) => f.name);
  assert.deepEqual(ask, ['question', 'mode', 'options', 'conversation_id']);
});

function fakeGateway(seen) {
  const { GatewayService } = loadGateway();
  const server = new grpc.Server();
  server.addService(GatewayService.service, {
    Search(call, callback) {
      seen.push({ rpc: 'Search', auth: call.metadata.get('authorization'), request: call.request });
      callback(null, {
        hits: [
          {
            document_id: 'demo-calls-0055',
            title: 'Call notes: Larkspur Industries',
            category: 'call_note',
            text: 'Security review: their security team has opened a formal security review.',
            score: 0.03,
            metadata: {
              fields: {
                company_id: { numberValue: 55 },
                company: { stringValue: 'Larkspur Industries' },
              },
            },
          },
        ],
        mode: 'SEARCH_MODE_HYBRID',
      });
    },
    Ask(call, callback) {
      seen.push({ rpc: 'Ask', auth: call.metadata.get('authorization'), request: call.request });
      if (call.metadata.get('authorization').length === 0) {
        callback({ code: grpc.status.UNAUTHENTICATED, details: 'missing API key' });
        return;
      }
      callback(null, { answer: { text: 'An answer [1].', citations: [{ document_id: 'demo-calls-0055' }] } });
    },
  });
  return new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
      if (error) {
        reject(error);
      } else {
        resolve({ server, address: `127.0.0.1:${port}` });
      }
    });
  });
}

test('calls send the bearer key and decode replies into plain JSON', async () => {
  const seen = [];
  const { server, address } = await fakeGateway(seen);
  const client = createClient(address);
  try {
    const reply = await search(client, 'tk_demo_key', 'security review', { topK: 3 });
    const hit = toPlain(reply).hits[0];
    assert.deepEqual(hit.metadata, { company_id: 55, company: 'Larkspur Industries' });
    assert.equal(reply.mode, 'SEARCH_MODE_HYBRID');
    assert.deepEqual(seen[0].auth, ['Bearer tk_demo_key']);
    assert.equal(seen[0].request.query, 'security review');
    assert.equal(seen[0].request.top_k, 3);

    const answer = await ask(client, 'tk_demo_key', 'Which accounts?');
    assert.equal(answer.answer.text, 'An answer [1].');
    assert.equal(answer.answer.citations[0].document_id, 'demo-calls-0055');

    await assert.rejects(ask(client, '', 'Which accounts?'), (error) => {
      assert.equal(error.code, grpc.status.UNAUTHENTICATED);
      return true;
    });
  } finally {
    client.close();
    server.forceShutdown();
  }
});

test('an unreachable gateway is UNAVAILABLE within the deadline', async () => {
  const client = createClient('127.0.0.1:1');
  try {
    await assert.rejects(
      search(client, 'key', 'anything', { deadlineSeconds: 5 }),
      (error) => error.code === grpc.status.UNAVAILABLE || error.code === grpc.status.DEADLINE_EXCEEDED,
    );
  } finally {
    client.close();
  }
});
