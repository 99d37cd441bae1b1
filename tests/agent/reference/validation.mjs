// Records the reference's full validation outcome for each (schema, args) case: the validated
// arguments as canonical JSON, or the whole error text (the conformance traces keep only its
// first line). Run from a copy of the conformance oracle (it has the reference installed):
//   cp validation.mjs "$d/" && node "$d/validation.mjs" validation_cases.json validation_expected.json
import { validateToolArguments } from "@mariozechner/pi-ai";
import { readFileSync, writeFileSync } from "node:fs";

function canonical(value) {
	if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
	if (value && typeof value === "object") {
		return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
	}
	return JSON.stringify(value);
}

const [input, output] = process.argv.slice(2);
const cases = JSON.parse(readFileSync(input, "utf8"));
const results = cases.map(({ schema, args }) => {
	try {
		return { ok: canonical(validateToolArguments({ name: "t", parameters: schema }, { name: "t", arguments: args })) };
	} catch (error) {
		return { error: error.message };
	}
});
writeFileSync(output, `${JSON.stringify(results, null, 1)}\n`);
