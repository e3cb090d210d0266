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
    channels: "Channels", contents: "Content", people: "People", memberships: "Memberships",
    invoices: "Invoices", payments: "Payments", accessEvents: "Access", orders: "Ad orders",
    deadUpdates: "Dead updates", team: "Team", audit: "Audit log", all: "All", more: "More",
    nothing: "Nothing here yet.", title: "Title", paid: "Paid", rights: "Bot's rights",
    yes: "yes", no: "no", notAdmin: "the bot is not an admin there", code: "Code", kind: "Kind",
    link: "Link", copy: "Copy", copied: "Copied", telegramUser: "Telegram user",
    firstSeen: "First seen", lastSeen: "Last seen", channel: "Channel", expires: "Expires",
    history: "History", reference: "Reference", amount: "Amount", created: "Created",
    gateway: "Gateway", applied: "Applied", paidAt: "Paid at", needsOwner: "Gateway events that need you",
    state: "State", attempts: "Attempts", retry: "Retry", order: "Order", ad: "Ad", price: "Price",
    progress: "Paid so far", due: "Pay by", approve: "Approve", reject: "Reject", update: "Update",
    received: "Received", replay: "Replay", name: "Name", role: "Role", when: "When",
    action: "Action", target: "Target", ownersOnly: "This page is for the workspace's owner.",
    forwardedPost: "(forwarded post)", text: "text", file: "file", post: "post",
    active: "active", paused: "paused", grace: "grace", expired: "expired", open: "open", cancelled: "cancelled",
    pending: "pending", processing: "processing", done: "done", failed: "failed",
    requested: "waiting for approval", approved: "approved, awaiting payment",
    part_paid: "part paid", rejected: "rejected", grant: "grant", reminder: "reminder",
    revoke: "removal", payment: "payment", sweep: "sweep", enabled: "enabled", disabled: "disabled",
    viewer: "viewer", editor: "editor", admin: "admin", owner: "owner",
    not_applied: "not applied", refused: "refused", not_success: "not successful",
    membersActive: "Members active", membersGrace: "Members in grace",
    ordersWaiting: "Ad orders to approve", accessFailing: "Access events failing",
    botProblems: "Bots with a problem", revenue: "Revenue, last 30 days",
    noRevenue: "No payments in the last 30 days.",
    slots: "Ad slots", admission: "Admission", noPaidChannel: "No paid channel yet.",
    admissionMode: "How people get in", single_use_link: "a single-use invite link",
    join_request: "a join request the bot approves", addToWhitelist: "Let someone in without paying",
    note: "Note", importMembers: "Import members", idsOnePerLine: "Telegram user ids, one per line",
    whitelist: "Whitelist", grantAccess: "Grant access until a date", until: "Until",
    reason: "Reason", import: "Import", remove: "Remove",
    imported: "{added} added of {accepted} accepted; {rejected} refused.", addSlot: "Add a slot",
    pinned_post: "pinned post", broadcast: "broadcast", button: "button", priceUsdt: "Price in USDT",
    acceptsTrx: "Also takes TRX", coins: "Coins", deactivate: "Deactivate", activate: "Activate",
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
    channels: "کانال‌ها", contents: "محتوا", people: "افراد", memberships: "عضویت‌ها",
    invoices: "صورت‌حساب‌ها", payments: "پرداخت‌ها", accessEvents: "دسترسی", orders: "سفارش‌های تبلیغ",
    deadUpdates: "به‌روزرسانی‌های ازکارافتاده", team: "تیم", audit: "گزارش تغییرات", all: "همه",
    more: "بیشتر", nothing: "هنوز چیزی نیست.", title: "عنوان", paid: "پولی", rights: "دسترسی ربات",
    yes: "بله", no: "نه", notAdmin: "ربات آنجا مدیر نیست", code: "کد", kind: "نوع", link: "پیوند",
    copy: "رونوشت", copied: "رونوشت شد", telegramUser: "کاربر تلگرام", firstSeen: "اولین بازدید",
    lastSeen: "آخرین بازدید", channel: "کانال", expires: "پایان", history: "تاریخچه",
    reference: "شناسه", amount: "مبلغ", created: "ساخته‌شده", gateway: "درگاه", applied: "اعمال‌شده",
    paidAt: "زمان پرداخت", needsOwner: "رویدادهای درگاه که به شما نیاز دارند", state: "وضعیت",
    attempts: "تلاش‌ها", retry: "تلاش دوباره", order: "سفارش", ad: "آگهی", price: "قیمت",
    progress: "پرداخت‌شده", due: "مهلت پرداخت", approve: "تأیید", reject: "رد", update: "به‌روزرسانی",
    received: "دریافت", replay: "اجرای دوباره", name: "نام", role: "نقش", when: "زمان",
    action: "کار", target: "هدف", ownersOnly: "این صفحه برای مالک فضای کار است.",
    forwardedPost: "(پست بازارسال‌شده)", text: "متن", file: "فایل", post: "پست",
    active: "فعال", paused: "متوقف", grace: "مهلت", expired: "منقضی", open: "باز", cancelled: "لغوشده",
    pending: "در انتظار", processing: "در حال انجام", done: "انجام‌شده", failed: "ناموفق",
    requested: "در انتظار تأیید", approved: "تأییدشده، در انتظار پرداخت", part_paid: "بخشی پرداخت‌شده",
    rejected: "ردشده", grant: "اعطا", reminder: "یادآوری", revoke: "حذف", payment: "پرداخت",
    sweep: "بررسی دوره‌ای", enabled: "فعال", disabled: "غیرفعال", viewer: "بیننده",
    editor: "ویرایشگر", admin: "مدیر", owner: "مالک", not_applied: "اعمال‌نشده", refused: "ردشده",
    not_success: "ناموفق",
    membersActive: "اعضای فعال", membersGrace: "اعضا در مهلت", ordersWaiting: "سفارش‌های منتظر تأیید",
    accessFailing: "دسترسی‌های ناموفق", botProblems: "ربات‌های دارای مشکل",
    revenue: "درآمد ۳۰ روز گذشته", noRevenue: "در ۳۰ روز گذشته پرداختی نبوده است.",
    slots: "جایگاه‌های تبلیغ", admission: "ورود به کانال", noPaidChannel: "هنوز کانال پولی نیست.",
    admissionMode: "شیوهٔ ورود", single_use_link: "پیوند دعوت یک‌بارمصرف",
    join_request: "درخواست عضویت که ربات می‌پذیرد", addToWhitelist: "ورود بدون پرداخت",
    note: "یادداشت", importMembers: "وارد کردن اعضا", idsOnePerLine: "شناسه‌های تلگرام، هر خط یکی",
    whitelist: "فهرست مجاز", grantAccess: "دسترسی تا یک تاریخ", until: "تا", reason: "دلیل",
    import: "وارد کردن", remove: "حذف", imported: "{added} افزوده از {accepted} پذیرفته؛ {rejected} رد شد.",
    addSlot: "افزودن جایگاه", pinned_post: "پست سنجاق‌شده", broadcast: "پیام همگانی", button: "دکمه",
    priceUsdt: "قیمت به USDT", acceptsTrx: "TRX هم پذیرفته شود", coins: "ارزها",
    deactivate: "غیرفعال‌سازی", activate: "فعال‌سازی",
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

// USDT is no ISO currency: the amount with its name after it.
export function money(amount, currency) {
  const code = String(currency).toUpperCase();
  try {
    if (code.length === 3 && code !== "TRX") {
      return new Intl.NumberFormat(current, { style: "currency", currency: code }).format(amount);
    }
  } catch { /* not a currency Intl knows */ }
  return `${new Intl.NumberFormat(current, { maximumFractionDigits: 6 }).format(amount)} ${code}`;
}

export function dateTime(value, timeZone) {
  const options = { dateStyle: "medium", timeStyle: "short", timeZone };
  try {
    return new Intl.DateTimeFormat(current, options).format(new Date(value));
  } catch {
    return new Intl.DateTimeFormat(current, { ...options, timeZone: "UTC" }).format(new Date(value));
  }
}
