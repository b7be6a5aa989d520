import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type Config } from "../config/config.ts";
import { systemClock } from "../config/clock.ts";
import { PLANS, USER_ROLES, Users, type UserRole } from "../domain/accounts/users.ts";
import { Tokens } from "../domain/tokens/tokens.ts";
import { ApiError, type Plan } from "../errors/index.ts";
import { migrate, openStore, type Store } from "../store/index.ts";

const USAGE = `usage: brickyard <command>

  serve                                          run the service (default)
  migrate                                        apply database migrations and exit
  user create --email E --handle H --password P  create an account
  user plan <handle> <plan>                      set a plan: ${PLANS.join(", ")}
  user role <handle> operator|member             make an account an operator (/admin), or not
  token mint <handle> [--name N] [--days 1..7]   mint a user token and print it
  backup <dir>                                   copy a running SQLite instance into a new folder
  recount [--app ID]                             set storage's running totals to what the rows hold

Configuration comes from the environment; see README.md.`;

export async function main(argv: string[]): Promise<number> {
  try {
    const config = loadConfig();
    const [command = "serve", sub, ...rest] = argv;
    switch (command) {
      case "serve": {
        // Loaded only here: the other commands start in a fraction of the time without the
        // whole service (HTTP server, executor, every route) in their module graph.
        const { closeOnSignals, serve } = await import("./serve.ts");
        closeOnSignals(await serve(config));
        return 0;
      }
      case "migrate":
        return await withStore(config, () => {
          console.log("migrations applied");
          return Promise.resolve();
        });
      case "user":
        if (sub === "create") return await userCreate(config, rest);
        if (sub === "plan") return await userPlan(config, rest);
        if (sub === "role") return await userRole(config, rest);
        break;
      case "token":
        if (sub === "mint") return await tokenMint(config, rest);
        break;
      case "backup":
        if (sub !== undefined) return await backupCommand(config, sub);
        break;
      case "recount":
        return await recountCommand(config, argv.slice(1));
      case "help":
      case "--help":
        console.log(USAGE);
        return 0;
    }
    console.error(USAGE);
    return 2;
  } catch (error) {
    if (error instanceof ConfigError || error instanceof ApiError) {
      console.error(`brickyard: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

async function withStore(config: Config, work: (store: Store) => Promise<void>): Promise<number> {
  // A one-off command keeps no read caches: no connection listening for other instances' changes.
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, prepare: config.databasePrepare, watch: false });
  try {
    await migrate(store);
    await work(store);
    return 0;
  } finally {
    await store.close();
  }
}

async function backupCommand(config: Config, target: string): Promise<number> {
  const { backup, BackupRefused } = await import("./backup.ts");
  try {
    const report = await backup(config, target);
    console.log(`backed up ${config.dataDir} into ${target}: the database (${report.database})` + (report.blobs === null ? "; assets, apps' blob values and build bundles are in the bucket: back it up with its own versioning, taken with this" : `, ${report.blobs} blob files`) + (report.secretsKey ? ", the secrets key" : "; SECRETS_KEY is set in the environment: keep it with the backup"));
    console.log(`start from it with DATA_DIR=${target} brickyard serve`);
    return 0;
  } catch (error) {
    if (!(error instanceof BackupRefused)) throw error;
    console.error(`brickyard backup: ${error.message}`);
    return 1;
  }
}

async function recountCommand(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { app: { type: "string" } } });
  const { liveInstances, recountTotals } = await import("../runtime/index.ts");
  // An instance on SQLite is its data's only writer, and keeps what each app holds in memory
  // (runtime/storage/ledger.ts): a total set from another process would go unseen there.
  const running = config.databaseUrl === null ? liveInstances(config.dataDir) : [];
  if (running.length > 0) {
    console.error(`brickyard recount: an instance is running on ${config.dataDir} (pid ${running.join(", ")}); on SQLite, stop it first`);
    return 1;
  }
  return withStore(config, async (store) => {
    const mended = await recountTotals(store, values.app);
    for (const m of mended) {
      const whose = m.visitors ? "its visitors' stores" : "its store";
      console.log(`app ${m.appId}, ${whose}: values ${m.kept.bytes} → ${m.counted.bytes} bytes, keys ${m.kept.keyBytes} → ${m.counted.keyBytes}`);
    }
    console.log(mended.length === 0 ? "every running total matches its rows" : `${mended.length} running total${mended.length === 1 ? "" : "s"} set to what the rows hold`);
  });
}

async function userCreate(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { email: { type: "string" }, handle: { type: "string" }, password: { type: "string" } } });
  if (values.email === undefined || values.handle === undefined || values.password === undefined) {
    console.error("user create needs --email, --handle and --password");
    return 2;
  }
  const { email, handle, password } = values;
  return withStore(config, async (store) => {
    const user = await new Users(store.db, systemClock).create({ email, handle, password });
    console.log(`created @${user.handle} (${user.id})`);
  });
}

async function userPlan(config: Config, args: string[]): Promise<number> {
  const [handle, plan] = args;
  if (handle === undefined || plan === undefined || !PLANS.includes(plan as Plan)) {
    console.error(`user plan needs a handle and one of: ${PLANS.join(", ")}`);
    return 2;
  }
  return withStore(config, async (store) => {
    const user = await new Users(store.db, systemClock).setPlan(handle, plan as Plan);
    console.log(`@${user.handle} is now on ${user.plan}`);
  });
}

async function userRole(config: Config, args: string[]): Promise<number> {
  const [handle, role] = args;
  if (handle === undefined || role === undefined || !USER_ROLES.includes(role as UserRole)) {
    console.error(`user role needs a handle and one of: ${USER_ROLES.join(", ")}`);
    return 2;
  }
  return withStore(config, async (store) => {
    const user = await new Users(store.db, systemClock).setRole(handle, role as UserRole);
    console.log(`@${user.handle} is now ${user.role === "operator" ? "an operator" : "a member"}`);
  });
}

async function tokenMint(config: Config, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { name: { type: "string" }, days: { type: "string" } } });
  const handle = positionals[0];
  const days = values.days === undefined ? 7 : Number(values.days);
  if (handle === undefined || !Number.isInteger(days) || days < 1 || days > 7) {
    console.error("token mint needs a handle, and --days between 1 and 7");
    return 2;
  }
  return withStore(config, async (store) => {
    const user = await new Users(store.db, systemClock).byHandle(handle);
    if (user === null) throw new ApiError("not_found", `no user with handle ${handle}`);
    const issued = await new Tokens(store.db, systemClock, config).mintUserToken(user.id, { name: values.name ?? "cli", days }, { actor: { kind: "cli" }, ip: null });
    console.log(issued.token);
  });
}
