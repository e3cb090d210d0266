// @ts-check
// Forms and action buttons. A refused form shows each problem beside its field, in the page's
// language, and moves the focus to the first; a destructive action asks first; a write that
// went through says so.
import { ApiProblem } from "./api.js";
import { element, notice, show, words } from "./dom.js";
import { has, t } from "./i18n.js";
import { reload } from "./router.js";

/**
 * @typedef {object} Field
 * @property {string} name the API's field name, so an answer's `errors` find it
 * @property {string} label the key of its words
 * @property {string} [type] an input type, or "textarea"
 * @property {string[]} [options] a select's values (each a key of words, unless `plain`)
 * @property {boolean} [plain] show the options as they are, not as words
 * @property {string} [value]
 * @property {boolean} [required]
 * @property {string} [hint] the key of a line under the field
 * @property {string} [autocomplete]
 */

/** @typedef {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} Input */

let made = 0;

/** @param {Field} field @returns {Input} */
function inputOf({ name, type = "text", options, plain = false, value = "", required = false, autocomplete }) {
  /** @type {Input} */
  let input;
  if (options) {
    const select = document.createElement("select");
    select.append(...options.map((o) => element("option", { value: o, text: plain ? o : t(o) })));
    select.value = value || options[0] || "";
    input = select;
  } else if (type === "textarea") {
    input = document.createElement("textarea");
    input.rows = 4;
    input.value = value;
  } else {
    const box = document.createElement("input");
    box.type = type;
    box.value = value;
    if (type === "number") box.inputMode = "numeric";
    input = box;
  }
  input.name = name;
  input.required = required;
  if (autocomplete) input.autocomplete = /** @type {AutoFill} */ (autocomplete);
  return input;
}

/**
 * A form of labelled fields. `submit(values)` does the write; then `then` runs (by default the
 * view is drawn again) and what `submit` returned (a notice's text) is shown.
 * @param {string} id
 * @param {Field[]} fields
 * @param {string} submitKey
 * @param {(values: Record<string, string>) => Promise<string | void>} submit
 * @param {{ then?: () => Promise<void> }} [options]
 */
export function formOf(id, fields, submitKey, submit, { then = reload } = {}) {
  /** @type {Record<string, Input>} */
  const inputs = {};
  /** @type {Record<string, HTMLElement>} */
  const problems = {};
  const rows = fields.map((field) => {
    const input = inputOf(field);
    const problemId = `f${++made}-problem`;
    input.id = `f${made}`;
    input.setAttribute("aria-describedby", problemId);
    inputs[field.name] = input;
    problems[field.name] = element("span", { class: "field-problem", id: problemId, "data-problem": field.name });
    const hint = field.hint ?? (has(`hint.${field.name}`) ? `hint.${field.name}` : null);
    return element("div", { class: "field" },
      words("label", field.label, { for: input.id }),
      input,
      ...(hint ? [words("span", hint, { class: "hint" })] : []),
      problems[field.name]);
  });
  const button = words("button", submitKey, { type: "submit" });
  const form = element("form", { id, novalidate: "" }, ...rows, button);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const [name, input] of Object.entries(inputs)) {
      input.removeAttribute("aria-invalid");
      problems[name].textContent = "";
    }
    // A password is taken as typed; other values without the spaces around them.
    const values = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.type === "password" ? v.value : v.value.trim()]));
    const missing = fields.filter((f) => f.required && !values[f.name]).map((f) => ({ field: f.name, code: "required" }));
    if (missing.length) {
      mark(missing);
      return;
    }
    button.setAttribute("disabled", "");
    try {
      const said = await submit(values);
      await then();
      if (said) document.getElementById(id)?.before(notice(said, `${id}-done`));
    } catch (error) {
      if (!(error instanceof ApiProblem && error.errors.length && mark(error.errors))) show(error);
    } finally {
      button.removeAttribute("disabled");
    }
  });

  /** @param {{ field: string, code: string }[]} errors @returns {boolean} whether one was shown */
  function mark(errors) {
    /** @type {Input | null} */
    let first = null;
    for (const { field, code } of errors) {
      // `plan.price` and `ids[3]` belong to the form's `price` and `ids`.
      const name = [field, field.split(".").pop() ?? "", field.split(/[.[]/)[0]].find((n) => n in inputs);
      if (!name) continue;
      const input = inputs[name];
      input.setAttribute("aria-invalid", "true");
      problems[name].textContent = t(`e.${code}`);
      first ??= input;
    }
    if (!first) return false;
    show(null);
    first.focus();
    return true;
  }
  return form;
}

/**
 * A button for one write on a row; the view is drawn again once it is done. A destructive one
 * (`confirm`) asks first, in place.
 * @param {string} key
 * @param {() => Promise<unknown>} run
 * @param {{ confirm?: boolean }} [options]
 */
export function actionButton(key, run, { confirm = false } = {}) {
  const button = words("button", key, { type: "button", "data-action": key });
  const act = async () => {
    try {
      await run();
      await reload();
    } catch (error) {
      show(error);
      button.removeAttribute("disabled");
    }
  };
  button.addEventListener("click", () => {
    if (!confirm) {
      button.setAttribute("disabled", "");
      act();
      return;
    }
    const yes = element("button", { type: "button", class: "danger", "data-confirm": key, text: t("confirmYes") });
    const no = words("button", "keep", { type: "button" });
    const asking = element("span", { class: "asking", role: "group" },
      element("span", { text: t("sure") }), yes, no);
    yes.addEventListener("click", () => { yes.setAttribute("disabled", ""); act(); });
    no.addEventListener("click", () => { asking.replaceWith(button); button.focus(); });
    button.replaceWith(asking);
    no.focus();
  });
  return button;
}
