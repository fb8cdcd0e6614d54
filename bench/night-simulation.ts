/**
 * `npm run bench:night` (or `npx tsx bench/night-simulation.ts`): the night simulation of bench/night/model.ts,
 * with no database. Prints, per scenario, how many hours 100,000 account erasures and one 1,000,000-document tenant
 * take, and the JSON of every result on the last line.
 */
import { EMULATOR, NIGHT_BRAKE, population, PRODUCTION, simulateNight, type NightResult, type NightSettings } from "./night/model";
import { defaultNightSettings } from "./night/settings";

async function main(): Promise<void> {
const base = await defaultNightSettings();
const accounts = population();
const scenarios: { name: string; settings: NightSettings; latency: typeof PRODUCTION }[] = [
  { name: "defaults, policy v1's brake", settings: base, latency: PRODUCTION },
  { name: "defaults, brake sized for the night", settings: { ...base, limits: { ...base.limits, ...NIGHT_BRAKE } }, latency: PRODUCTION },
  { name: "defaults, brake sized for the night (emulator latency)", settings: { ...base, limits: { ...base.limits, ...NIGHT_BRAKE } }, latency: EMULATOR },
  { name: "concurrency 1", settings: { ...base, requestConcurrency: 1, limits: { ...base.limits, ...NIGHT_BRAKE } }, latency: PRODUCTION },
  { name: "concurrency 50, start rate 1,000", settings: { ...base, requestConcurrency: 50, startOpsPerSecond: 1000, limits: { ...base.limits, ...NIGHT_BRAKE } }, latency: PRODUCTION },
];
const results: (NightResult & { scenario: string })[] = [];
const h = (x: number) => x.toFixed(2).padStart(6);
process.stdout.write(`${accounts.length.toLocaleString("en")} erasures + one 1,000,000-document tenant\n\n`);
process.stdout.write("scenario                                                 night h  erasures h  tenant h  enqueue h  done    deferred  deletes/s\n");
for (const sc of scenarios) {
  const r = { scenario: sc.name, ...simulateNight(accounts, sc.settings, sc.latency) };
  results.push(r);
  process.stdout.write(
    `${sc.name.padEnd(56)} ${h(r.nightHours)}  ${h(r.requestsHours)}      ${h(r.tenantHours)}    ${h(r.enqueueHours)}   ${String(r.done).padStart(6)}  ${String(r.deferred).padStart(6)}    ${r.requestDeletesPerSecond.toFixed(0).padStart(5)}\n`,
  );
}
const main = results[1]!;
process.stdout.write(
  `\nWith the defaults and a brake sized for the night (${main.latency}): ${main.nightHours.toFixed(1)} hours. ` +
    `${main.deletes.toLocaleString("en")} documents; the tenant plans in ${main.tenantPlanSeconds.toFixed(0)} s of its task's 480 s budget ` +
    `and ${main.tenantNeedsApproval ? "waits for a retention-admin's approval (modelled as given)" : "passes the brake"}; ` +
    `${main.fannedOut} erasures fan out to purgeChunk; ${main.crashed} tasks crash and resume. First bottleneck: ${main.bottleneck}.\n`,
);
process.stdout.write(`${JSON.stringify(results.map(({ settings, ...r }) => ({ ...r, concurrency: settings.requestConcurrency })))}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`night simulation failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
