// The page's words in English and Persian; numbers and dates through Intl for the language.
const WORDS = {
  en: {
    brand: "Gatehouse", language: "Language", signIn: "Sign in", signOut: "Sign out",
    email: "Email", password: "Password", signedInAs: "Signed in as {email} ({role})",
    bots: "Bots", workspace: "Workspace", wait: "Try again in {seconds} s.",
    unreachable: "The panel API could not be reached.",
    dashboard: "Dashboard", firstStart: "First start? Create the owner", setUp: "Create the owner",
    setupCode: "Setup code (printed by panel-api)", backToSignIn: "Back to sign-in",
    addBot: "Add a bot", token: "Bot token", mode: "Mode", add: "Add", username: "Username",
    status: "Status", lastError: "Last error", none: "none",
    timeZone: "Time zone", tronAddress: "Shop's TRON address", save: "Save", saved: "Saved.",
  },
  fa: {
    brand: "گیت‌هاوس", language: "زبان", signIn: "ورود", signOut: "خروج",
    email: "ایمیل", password: "گذرواژه", signedInAs: "وارد شده با {email} ({role})",
    bots: "ربات‌ها", workspace: "فضای کار", wait: "{seconds} ثانیه دیگر دوباره تلاش کنید.",
    unreachable: "به API پنل دسترسی نیست.",
    dashboard: "پیشخوان", firstStart: "اولین اجرا؟ مالک را بسازید", setUp: "ساخت مالک",
    setupCode: "کد راه‌اندازی (چاپ‌شده توسط panel-api)", backToSignIn: "بازگشت به ورود",
    addBot: "افزودن ربات", token: "توکن ربات", mode: "حالت", add: "افزودن", username: "نام کاربری",
    status: "وضعیت", lastError: "آخرین خطا", none: "هیچ",
    timeZone: "منطقهٔ زمانی", tronAddress: "آدرس ترون فروشگاه", save: "ذخیره", saved: "ذخیره شد.",
  },
};
const KEY = "gatehouse.language";
let current = "en";

export function language() { return current; }

export function chosenLanguage(fallback) {
  const kept = localStorage.getItem(KEY);
  return WORDS[kept] ? kept : (WORDS[fallback] ? fallback : "en");
}

export function setLanguage(lang, remember = false) {
  current = WORDS[lang] ? lang : "en";
  if (remember) localStorage.setItem(KEY, current);
  document.documentElement.lang = current;
  document.documentElement.dir = current === "fa" ? "rtl" : "ltr";
  for (const node of document.querySelectorAll("[data-text]")) {
    node.textContent = t(node.dataset.text);
  }
}

export function t(key, values = {}) {
  const text = WORDS[current][key] ?? WORDS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ""));
}

export function number(value) {
  return new Intl.NumberFormat(current).format(value);
}
