// pi's RpcClient starts `node <cliPath> --mode rpc ...`: this cliPath runs tether instead.
// The command is $TETHER_COMMAND (a JSON array, e.g. ["/venv/bin/python", "-m", "tether.cli"]),
// else `tether` on PATH. stdio is handed over as is; signals are passed on; tether's exit code is ours.
import { spawn } from "node:child_process";

const command = process.env.TETHER_COMMAND ? JSON.parse(process.env.TETHER_COMMAND) : ["tether"];
const child = spawn(command[0], [...command.slice(1), ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
	process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
