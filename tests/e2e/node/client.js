#!/usr/bin/env node
// A second, independent Tandem client: Node.js with @grpc/grpc-js and @grpc/proto-loader,
// loading the .proto files exactly as shipped in protos/ (no generated code, no Python).
// It proves a non-Python product backend can call the public contract.
//
// Usage:
//   TANDEM_API_KEY=... node client.js search "security review" [--top-k 5] [--mode HYBRID]
//   TANDEM_API_KEY=... node client.js ask "Which accounts ...?" [--mode AUTO]
// Environment: TANDEM_GATEWAY_ADDR (default 127.0.0.1:50051), TANDEM_API_KEY (required),
// TANDEM_PROTOS_DIR (default: the repository's protos/), TANDEM_DEADLINE_S (default 60).
// Prints one JSON object on stdout; on a gRPC error prints {"error": {...}} and exits 1.
'use strict';

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const DEFAULT_PROTOS_DIR = path.resolve(__dirname, '..', '..', '..', 'protos');
const GATEWAY_PROTO = 'tandem/v1/gateway_service.proto';

// Field names stay as written in the protos (snake_case), enums as their names, int64 as
// strings (no precision loss), unset fields with their defaults, and set oneof members
// named in a virtual field: what a JSON-minded backend wants.
const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** Load the gateway contract from `protosDir` and return the GatewayService constructor. */
function loadGateway(protosDir = process.env.TANDEM_PROTOS_DIR || DEFAULT_PROTOS_DIR) {
  const definition = protoLoader.loadSync(GATEWAY_PROTO, {
    ...LOADER_OPTIONS,
    includeDirs: [protosDir],
  });
  const proto = grpc.loadPackageDefinition(definition);
  return { GatewayService: proto.tandem.v1.GatewayService, definition };
}

/** A GatewayService client for `address` over an insecure (loopback/mesh) channel. */
function createClient(address = process.env.TANDEM_GATEWAY_ADDR || '127.0.0.1:50051', protosDir) {
  const { GatewayService } = loadGateway(protosDir);
  return new GatewayService(address, grpc.credentials.createInsecure());
}

/** Call metadata carrying the API key the way the contract asks: `authorization: Bearer …`. */
function authMetadata(apiKey) {
  const metadata = new grpc.Metadata();
  if (apiKey) {
    metadata.set('authorization', `Bearer ${apiKey}`);
  }
  return metadata;
}

function unary(client, method, request, apiKey, deadlineSeconds) {
  const deadline = new Date(Date.now() + deadlineSeconds * 1000);
  return new Promise((resolve, reject) => {
    client[method](request, authMetadata(apiKey), { deadline }, (error, response) => {
      if (error) {
        reject(error);
      } else {
        resolve(response);
      }
    });
  });
}

/** GatewayService.Search: the tenant's documents for `query`. */
function search(client, apiKey, query, { topK = 5, mode = 'SEARCH_MODE_HYBRID', deadlineSeconds = 60 } = {}) {
  return unary(client, 'Search', { query, top_k: topK, mode }, apiKey, deadlineSeconds);
}

/** GatewayService.Ask: one cited answer to `question`. */
function ask(client, apiKey, question, { mode = 'ASK_MODE_UNSPECIFIED', deadlineSeconds = 60 } = {}) {
  return unary(client, 'Ask', { question, mode }, apiKey, deadlineSeconds);
}

// google.protobuf.Struct / Value arrive as messages; JSON readers want plain values.
function structToJson(struct) {
  const out = {};
  for (const [key, value] of Object.entries(struct.fields || {})) {
    out[key] = valueToJson(value);
  }
  return out;
}

// protobufjs bundles the well-known types with camelCase field names whatever keepCase
// says, so Value's members are nullValue, numberValue, ...
function valueToJson(value) {
  switch (value.kind) {
    case 'nullValue':
      return null;
    case 'numberValue':
      return value.numberValue;
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'structValue':
      return structToJson(value.structValue);
    case 'listValue':
      return (value.listValue.values || []).map(valueToJson);
    default:
      return null;
  }
}

/** Replace every Struct in a decoded response with plain JSON (in a copy). */
function toPlain(node) {
  if (Array.isArray(node)) {
    return node.map(toPlain);
  }
  if (node && typeof node === 'object' && !Buffer.isBuffer(node)) {
    const keys = Object.keys(node);
    if (keys.length === 1 && keys[0] === 'fields' && typeof node.fields === 'object') {
      return structToJson(node);
    }
    const out = {};
    for (const key of keys) {
      out[key] = toPlain(node[key]);
    }
    return out;
  }
  return node;
}

function errorJson(error) {
  return {
    error: {
      code: error.code,
      status: Object.keys(grpc.status).find((name) => grpc.status[name] === error.code) || 'UNKNOWN',
      message: error.details || error.message,
    },
  };
}

function parseArgs(argv) {
  const [command, text, ...rest] = argv;
  const options = {};
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (flag === '--top-k') {
      options.topK = Number.parseInt(value, 10);
    } else if (flag === '--mode') {
      options.mode = value;
    } else {
      throw new Error(`unknown option ${flag}`);
    }
  }
  return { command, text, options };
}

async function main(argv) {
  const { command, text, options } = parseArgs(argv);
  if (!['search', 'ask'].includes(command) || !text) {
    process.stderr.write('usage: client.js search|ask "text" [--top-k N] [--mode MODE]\n');
    return 2;
  }
  const apiKey = process.env.TANDEM_API_KEY || '';
  const deadlineSeconds = Number.parseFloat(process.env.TANDEM_DEADLINE_S || '60');
  const client = createClient();
  try {
    const response =
      command === 'search'
        ? await search(client, apiKey, text, {
            ...options,
            mode: options.mode ? `SEARCH_MODE_${options.mode}` : undefined,
            deadlineSeconds,
          })
        : await ask(client, apiKey, text, {
            mode: options.mode ? `ASK_MODE_${options.mode}` : undefined,
            deadlineSeconds,
          });
    process.stdout.write(`${JSON.stringify(toPlain(response))}\n`);
    return 0;
  } catch (error) {
    process.stdout.write(`${JSON.stringify(errorJson(error))}\n`);
    return 1;
  } finally {
    client.close();
  }
}

module.exports = { loadGateway, createClient, authMetadata, search, ask, toPlain, structToJson };

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
