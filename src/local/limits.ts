// The size limits (docs/decisions.md#size-limits) of what this agent registers, from its API or
// its config files: a service, its sidecar and their checks are checked as the catalog rows that
// anti-entropy will write for them (src/catalog/limits.ts), so that the catalog never refuses a
// registration the agent took. The check targets that become a catalog check's Definition are
// checked first under the names a registration gives them.
import { limitCheck, limitService, NOTES_MAX } from '../catalog/limits.js';
import { limitBytes } from '../core/size-limits.js';
import { checkEntry, serviceEntry } from './catalog-entries.js';
import { serviceCheckId, toLocalCheck, toLocalService } from './local-state.js';
import type { CheckDefinition, CheckSpec, LocalService, ServiceDefinition } from './model.js';
import { sidecarDefinition } from './sidecar.js';

/** An HTTP check's URL: the length most clients and servers take. */
export const CHECK_HTTP_MAX = 2048;
/** A TCP or gRPC check's `host:port` (gRPC: `/service` after it); the three fit a Definition's 4 KiB. */
export const CHECK_TARGET_MAX = 512;

/** A service definition, its checks, and its sidecar's as registered (defaults filled in). */
export function limitServiceDefinition(def: ServiceDefinition): void {
  const service = toLocalService(def, 'api', undefined);
  limitService(serviceEntry(service), { at: '', name: 'Name' });
  limitChecks(def.checks, service, '');
  const nested = def.sidecarService;
  if (nested === undefined) return;
  // The sidecar's ID and name are the service's with `-sidecar-proxy`; its port does not matter here.
  const sidecar = sidecarDefinition(service, nested, { min: 1, max: 1 }, []);
  const proxy = toLocalService(sidecar, 'api', service.id);
  const at = 'Connect.SidecarService.';
  limitService(serviceEntry(proxy), { at, name: 'Name' });
  limitChecks(sidecar.checks, proxy, at);
}

/** A standalone check (PUT /v1/agent/check/register, a config `check` block). */
export function limitCheckDefinition(def: CheckDefinition): void {
  limitSpec(def, def.checkId || def.name, undefined, '');
}

/** A maintenance reason: it becomes the maintenance check's Notes. */
export function limitMaintenanceReason(reason: string): void {
  limitBytes('reason', reason, NOTES_MAX);
}

function limitChecks(specs: readonly CheckSpec[], service: LocalService, at: string): void {
  specs.forEach((spec, i) => limitSpec(spec, serviceCheckId(service.id, specs, i), service, `${at}Checks[${i}].`));
}

function limitSpec(spec: CheckSpec, id: string, service: LocalService | undefined, at: string): void {
  limitBytes(`${at}HTTP`, spec.http, CHECK_HTTP_MAX);
  limitBytes(`${at}TCP`, spec.tcp, CHECK_TARGET_MAX);
  limitBytes(`${at}GRPC`, spec.grpc, CHECK_TARGET_MAX);
  limitCheck(checkEntry(toLocalCheck(id, spec, service, 'api')), at);
}
