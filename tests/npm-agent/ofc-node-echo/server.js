#!/usr/bin/env node
// The OFC agent API on 127.0.0.1:$OFC_PORT with Node's http module.
const http = require("http");
const shout = require("ofc-node-shout");

// Bodies larger than this are refused: the floor never sends more to a small agent.
const MAX_BODY = 1 << 20;
const INFO = {
  id: "@nodeecho",
  name: "Node Echo",
  tagline: "Shouts back the last message",
  description: "A Node agent installed by ofc from an npm package with a dependency.",
  activation: "mention",
};

function send(res, status, doc) {
  const body = JSON.stringify(doc);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

http
  .createServer((req, res) => {
    if (req.method === "GET" && req.url === "/ofc/info") return send(res, 200, INFO);
    if (req.method !== "POST") return send(res, 404, { error: "not found" });
    let body = "";
    req.on("data", (c) => {
      body += c;
      if (body.length > MAX_BODY) req.destroy();
    });
    req.on("end", () => {
      let doc;
      try {
        doc = JSON.parse(body || "{}");
      } catch (e) {
        return send(res, 400, { error: "invalid JSON" });
      }
      if (req.url === "/ofc/should-wake") return send(res, 200, { wake: true });
      if (req.url === "/ofc/respond") {
        const msgs = doc.messages || [];
        const last = msgs.length ? msgs[msgs.length - 1].content || "" : "";
        return send(res, 200, { content: shout(last) });
      }
      send(res, 404, { error: "not found" });
    });
  })
  .listen(Number(process.env.OFC_PORT || 0), "127.0.0.1");
