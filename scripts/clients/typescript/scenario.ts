// The scenario of package clients with openapi-fetch, over the types that
// openapi-typescript generates from the served document (schema.d.ts):
// against the server at the URL of the first argument, with the bearer
// token of the second, it prints what it saw, one step a line.
//
// openapi-fetch resolves every answer, never rejects for a status: an
// answer outside 2xx comes as `error`, the decoded PlantStoreError, with
// `response.status` 400 or, with -conventional-status, the Error's code.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type PlantStoreError = components["schemas"]["PlantStoreError"];
type Plant = components["schemas"]["Plant"];
type ListedPlant = components["schemas"]["ListedPlant"];
type NewPlant = components["schemas"]["NewPlant"];

const args = process.argv.slice(2);
if (args.length !== 2) {
  console.error("usage: node scenario.js URL TOKEN");
  process.exit(2);
}
const [base, token] = args as [string, string];

function newClient(token?: string) {
  return createClient<paths>({
    baseUrl: base,
    headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
  });
}

const client = newClient(token);

function report(step: string, saw: string): void {
  console.log(`${step}\t${saw}`);
}

function tag(t: string | undefined): string {
  return t === undefined ? "" : ` tag:${JSON.stringify(t)}`;
}

function failure(error: PlantStoreError | undefined, response: Response): string {
  if (error === undefined) {
    return `status ${response.status} without an Error`;
  }
  const message = error.message === "" ? " without a message" : "";
  return `Error ${error.error}${message}, status ${response.status}, as error`;
}

async function create(body: NewPlant, c = client): Promise<string> {
  const { data, error, response } = await c.POST("/plants", { body });
  return data ? plant(data, response) : failure(error, response);
}

function plant(p: Plant, r: Response): string {
  return `${r.status} {name:${JSON.stringify(p.name)}${tag(p.tag)}}`;
}

function listed(p: ListedPlant, r: Response): string {
  return `${r.status} {id:${p.id} name:${JSON.stringify(p.name)}${tag(p.tag)}}`;
}

async function get(id: number): Promise<string> {
  const { data, error, response } = await client.GET("/plants/{id}", { params: { path: { id } } });
  return data ? listed(data, response) : failure(error, response);
}

async function remove(id: number): Promise<string> {
  const { error, response } = await client.DELETE("/plants/{id}", { params: { path: { id } } });
  return response.status === 204 ? "204" : failure(error, response);
}

// nextAfter returns the after parameter of the page that a Link header,
// such as `<?limit=2&after=4>; rel="next"`, names, resolved against the
// URL of the answer; undefined when there is none: the page was the last.
function nextAfter(response: Response): number | undefined {
  const link = response.headers.get("Link");
  const end = link?.indexOf(">") ?? -1;
  if (link === null || !link.startsWith("<") || end < 0 || !link.slice(end).includes('rel="next"')) {
    return undefined;
  }
  const after = new URL(link.slice(1, end), response.url).searchParams.get("after");
  return after === null ? undefined : Number(after);
}

report("create", await create({ id: 1, name: "Fern", tag: "green" }));
report("create without tag", await create({ id: 2, name: "Ivy" }));
report("get", await get(1));
report("get unknown", await get(404));
report("duplicate id", await create({ id: 1, name: "Fern" }));
report("bad body: NUL in name", await create({ id: 3, name: "Fe\u0000rn" }));
report("bad body: NUL in tag", await create({ id: 3, name: "Fern", tag: "\u0000" }));
// What a number and a string let through, and the server refuses.
report("bad body: id 1.5", await create({ id: 1.5, name: "Fern" }));
report("bad body: lone surrogate", await create({ id: 3, name: "\ud800" }));
report("no token", await create({ id: 3, name: "Moss" }, newClient()));
report("wrong token", await create({ id: 3, name: "Moss" }, newClient("wrong")));
for (const p of [{ id: 3, name: "Moss" }, { id: 4, name: "Aloe" }, { id: 5, name: "Pothos" }]) {
  report(`create ${p.id}`, await create(p));
}

// Every page but the last has a Link to the next; its after is where the
// next page starts.
let after: number | undefined;
for (let page = 1; ; page++) {
  const { data, error, response } = await client.GET("/plants", { params: { query: { limit: 2, after } } });
  if (!data) {
    report(`list page ${page}`, failure(error, response));
    break;
  }
  const ids = `[${data.map((p) => p.id).join(" ")}]`;
  after = nextAfter(response);
  if (after === undefined) {
    report(`list page ${page}`, `${response.status} ${ids} last`);
    break;
  }
  report(`list page ${page}`, `${response.status} ${ids} next after=${after}`);
}

report("delete", await remove(5));
report("delete again", await remove(5));
