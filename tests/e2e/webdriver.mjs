// The one W3C WebDriver call both e2e scripts make (plain fetch, no client
// library): `wd(method, path, body)` against a tauri-driver at `driverUrl`,
// returning the response's `value` or throwing with the driver's message.
export function webdriver(driverUrl) {
  return async function wd(method, url, body) {
    const res = await fetch(driverUrl + url, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json.value ?? json)}`);
    return json.value;
  };
}
