// `maint`: Consul's `consul maint`, same flags, same lines. With -enable or -disable it turns node
// (or, with -service, service) maintenance on or off; with neither it lists what is in maintenance.
import { usageError } from '../usage-error.js';
import type { ClientCommand } from './command.js';

interface AgentCheck {
  readonly CheckID: string;
  readonly ServiceID: string;
  readonly Notes: string;
}

export const maintCommands: ClientCommand[] = [
  {
    name: 'maint',
    synopsis: 'Controls node or service maintenance mode',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      enable: { kind: 'bool', doc: 'Enable maintenance mode.' },
      disable: { kind: 'bool', doc: 'Disable maintenance mode.' },
      reason: { kind: 'string', doc: 'Text describing the maintenance reason.' },
      service: { kind: 'string', doc: 'Control maintenance mode for a specific service ID.' },
    },
    async run({ api, flags, io }) {
      const enable = flags.enable === true;
      const disable = flags.disable === true;
      const reason = typeof flags.reason === 'string' ? flags.reason : '';
      const service = typeof flags.service === 'string' ? flags.service : '';
      if (enable && disable)
        throw usageError('CLI_FLAG_CONFLICT', { detail: 'Only one of -enable or -disable may be provided' });
      if (!enable && reason !== '')
        throw usageError('CLI_FLAG_CONFLICT', { detail: 'Reason may only be provided with -enable' });
      if (!enable && !disable && service !== '')
        throw usageError('CLI_FLAG_MISSING', { detail: 'Service requires either -enable or -disable' });
      const self = await api.json<{ Config: { NodeName: string } }>(
        'GET',
        '/v1/agent/self',
        undefined,
        'querying Consul agent',
      );
      if (!enable && !disable) {
        const checks = await api.json<Record<string, AgentCheck>>(
          'GET',
          '/v1/agent/checks',
          undefined,
          'getting checks',
        );
        for (const check of Object.values(checks)) {
          if (check.CheckID === '_node_maintenance')
            io.out(`Node:\n  Name:   ${self.Config.NodeName}\n  Reason: ${check.Notes}\n\n`);
          else if (check.CheckID.startsWith('_service_maintenance:'))
            io.out(`Service:\n  ID:     ${check.ServiceID}\n  Reason: ${check.Notes}\n\n`);
        }
        return 0;
      }
      const verb = enable ? 'enabling' : 'disabling';
      const query = `enable=${enable}${enable ? `&reason=${encodeURIComponent(reason)}` : ''}`;
      if (service === '') {
        await api.expectOk('PUT', `/v1/agent/maintenance?${query}`, undefined, `${verb} node maintenance`);
        io.out(`Node maintenance is now ${enable ? 'enabled' : 'disabled'}\n`);
        return 0;
      }
      const path = `/v1/agent/service/maintenance/${encodeURIComponent(service)}?${query}`;
      await api.expectOk('PUT', path, undefined, `${verb} service maintenance`);
      io.out(`Service maintenance is now ${enable ? 'enabled' : 'disabled'} for ${JSON.stringify(service)}\n`);
      return 0;
    },
  },
];
