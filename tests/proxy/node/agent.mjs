// An agent written against the official openai npm package, unmodified: it reads
// OPENAI_BASE_URL and OPENAI_API_KEY like any Node agent. It prints one JSON line of
// what it got, so a test can compare a recorded run with its replay.
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0 });
const question = process.argv[2] ?? "hi";
const out = {};

const reply = await client.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: question }],
});
out.chat = reply.choices[0].message.content;

const stream = await client.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: question }],
  stream: true,
});
out.deltas = [];
for await (const chunk of stream) {
  if (chunk.choices.length) out.deltas.push(chunk.choices[0].delta.content ?? null);
}

const response = await client.responses.create({ model: "gpt-4o-mini", input: question });
out.responses = response.output_text;

const embedding = await client.embeddings.create({ model: "text-embedding-3-small", input: question });
out.dimensions = embedding.data[0].embedding.length;

try {
  await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: `${question} (last)` }],
  });
  out.last = "ok";
} catch (error) {
  out.last = { status: error.status, name: error.constructor.name, message: String(error.message).split("\n")[0] };
}
console.log(JSON.stringify(out));
