// Parameter forms generated from a scenario's JSON schema (pydantic's model_json_schema()).
// Scenario parameters are flat: integers and numbers with bounds, booleans, enums (Literal), strings.
// Values are sent with their JSON types because the server validates strictly ("3" is not 3).
import { escapeHtml } from "./format.js";

/** Resolve a local "$ref": "#/$defs/Name" against the root schema. */
function resolve(root, schema) {
  if (schema && typeof schema.$ref === "string" && schema.$ref.startsWith("#/$defs/")) {
    return { ...root.$defs?.[schema.$ref.slice(8)], ...schema, $ref: undefined };
  }
  if (schema && Array.isArray(schema.allOf) && schema.allOf.length === 1) return { ...resolve(root, schema.allOf[0]), ...schema, allOf: undefined };
  return schema ?? {};
}

/** Build the inputs for `schema` with `defaults` into `form`; returns a function reading the values. */
export function buildForm(form, schema, defaults = {}) {
  form.replaceChildren();
  const fields = [];
  const properties = schema?.properties ?? {};
  for (const [name, raw] of Object.entries(properties)) {
    const prop = resolve(schema, raw);
    const value = defaults[name] ?? prop.default;
    const label = document.createElement("label");
    label.className = "field";
    const title = prop.title || name;
    const range =
      prop.minimum !== undefined || prop.maximum !== undefined
        ? ` <span class="muted">${prop.minimum ?? ""}–${prop.maximum ?? ""}</span>`
        : "";
    label.innerHTML = `<span>${escapeHtml(title)}${range}</span>`;
    if (prop.description) label.title = prop.description;
    let input;
    let read;
    const choices = prop.enum ?? (prop.const !== undefined ? [prop.const] : null);
    if (choices) {
      input = document.createElement("select");
      for (const choice of choices) input.append(new Option(String(choice), JSON.stringify(choice)));
      input.value = JSON.stringify(value ?? choices[0]);
      read = () => JSON.parse(input.value);
    } else if (prop.type === "boolean") {
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = Boolean(value);
      label.classList.add("checkbox");
      read = () => input.checked;
    } else if (prop.type === "integer" || prop.type === "number") {
      input = document.createElement("input");
      input.type = "number";
      input.step = prop.type === "integer" ? "1" : "any";
      if (prop.minimum !== undefined) input.min = String(prop.minimum);
      if (prop.maximum !== undefined) input.max = String(prop.maximum);
      if (value !== undefined && value !== null) input.value = String(value);
      read = () => {
        const text = input.value.trim();
        const number = Number(text);
        if (text === "" || !Number.isFinite(number)) throw new Error(`${title}: enter a number`);
        if (prop.type === "integer" && !Number.isInteger(number)) throw new Error(`${title}: enter a whole number`);
        if (prop.minimum !== undefined && number < prop.minimum) throw new Error(`${title}: at least ${prop.minimum}`);
        if (prop.maximum !== undefined && number > prop.maximum) throw new Error(`${title}: at most ${prop.maximum}`);
        return number;
      };
    } else if (prop.type === "string") {
      input = document.createElement("input");
      input.type = "text";
      input.value = value ?? "";
      read = () => input.value;
    } else {
      // Anything else (lists, unions): edited as JSON text, checked by the server.
      input = document.createElement("input");
      input.type = "text";
      input.value = JSON.stringify(value ?? null);
      read = () => {
        try {
          return JSON.parse(input.value);
        } catch {
          throw new Error(`${title}: not valid JSON`);
        }
      };
    }
    input.name = name;
    input.dataset.param = name;
    label.append(input);
    form.append(label);
    fields.push([name, read]);
  }
  if (!fields.length) form.innerHTML = '<p class="muted">This scenario has no parameters.</p>';
  return () => Object.fromEntries(fields.map(([name, read]) => [name, read()]));
}
