// The official TypeScript SDK's OAuth discovery against one MCP URL (argv[2]): prints what
// `discoverOAuthProtectedResourceMetadata` concluded, one line: `metadata: <resource>` when
// it found the metadata, else its error message. Exit code 0 either way (the caller judges).
import { discoverOAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/client/auth.js';

const url = process.argv[2];
if (!url) {
  console.error('usage: node discovery.mjs URL');
  process.exit(2);
}
try {
  const m = await discoverOAuthProtectedResourceMetadata(url);
  console.log(`metadata: ${m.resource}`);
} catch (e) {
  console.log(e.message);
}
