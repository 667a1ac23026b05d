# Debian's python3-consul (python-consul 0.7.1) against a running agent, called as a user's script
# calls it. Each step prints one JSON line, {"step": ..., ...}, that test/integration/python-consul.test.ts
# asserts. Where 0.7.1 has no method (a sidecar) or calls a method Consul 1.0 stopped taking (GET on the
# agent's write endpoints), the step goes through the library's own HTTP client, c.http, and says so.
import json
import sys
import time

import consul
from consul.base import CB

c = consul.Consul(host='127.0.0.1', port=int(sys.argv[1]))
NODE = c.agent.self()['Config']['NodeName']


def emit(step, **fields):
    print(json.dumps(dict(step=step, **fields), sort_keys=True), flush=True)


def until(read, done):
    """Blocking reads (?index=&wait=) until done(data): woken by the change, not polled."""
    index, data = read(None)
    give_up = time.monotonic() + 60
    while not done(data) and time.monotonic() < give_up:
        index, data = read(index)
    return data


def put(path, params=None, body=None):
    """A PUT through the library's HTTP client: True on 200, as its own methods answer."""
    return c.http.put(CB.bool(), path, params=params, data='' if body is None else json.dumps(body))


def api_passing(present):
    """The agent's own `api` instances through health.service(passing=True), read with the index the
    library returns until anti-entropy has put them there (present) or taken them out."""
    healthy = until(lambda i: c.health.service('api', passing=True, index=i, wait='30s'),
                    lambda d: (len(d) > 0) == present)
    return [{'id': h['Service']['ID'], 'own_node': h['Node']['Node'] == NODE,
             'checks': sorted(k['CheckID'] for k in h['Checks'])} for h in healthy]


def check(check_id):
    found = c.agent.checks().get(check_id)
    return None if found is None else {'status': found['Status'], 'output': found['Output']}


# A service through agent.service.register; its sidecar through c.http (0.7.1 has no `connect`).
emit('register', ok=c.agent.service.register('api', service_id='api-1', port=9000, tags=['v1']))
emit('register_sidecar', ok=put('/v1/agent/service/register', body={
    'Name': 'web', 'ID': 'web-1', 'Port': 8080, 'Connect': {'SidecarService': {}}}))
emit('agent_services', services={
    sid: {'name': s['Service'], 'kind': s.get('Kind', ''), 'port': s['Port'],
          'destination': (s.get('Proxy') or {}).get('DestinationServiceName', '')}
    for sid, s in c.agent.services().items()})

# The catalog and health reads, on instances written with catalog.register: one passing, one critical.
# Only these nodes are read back: the agent's own node may list its services too (anti-entropy).
OTHERS = ('node-b', 'node-c')
emit('catalog_register', ok=[
    c.catalog.register('node-b', '10.1.0.2',
                       service={'Service': 'web', 'ID': 'web-b', 'Port': 8080, 'Tags': ['v2']},
                       check={'Node': 'node-b', 'CheckID': 'service:web-b', 'Name': 'web alive',
                              'Status': 'passing', 'ServiceID': 'web-b'}),
    c.catalog.register('node-b', '10.1.0.2',
                       service={'Service': 'web-sidecar-proxy', 'ID': 'web-b-sidecar-proxy',
                                'Kind': 'connect-proxy', 'Port': 21000,
                                'Proxy': {'DestinationServiceName': 'web', 'DestinationServiceID': 'web-b',
                                          'LocalServicePort': 8080}}),
    c.catalog.register('node-c', '10.1.0.3',
                       service={'Service': 'web', 'ID': 'web-c', 'Port': 8080},
                       check={'Node': 'node-c', 'CheckID': 'service:web-c', 'Name': 'web alive',
                              'Status': 'critical', 'ServiceID': 'web-c'}),
])
web = until(lambda i: c.catalog.service('web', index=i, wait='30s'), lambda d: len(d) >= 2)
emit('catalog_service', instances=sorted(
    [{'node': n['Node'], 'address': n['Address'], 'id': n['ServiceID'], 'port': n['ServicePort'],
      'tags': n['ServiceTags']} for n in web if n['Node'] in OTHERS],
    key=lambda n: n['id']))
proxies = c.catalog.service('web-sidecar-proxy')[1]
emit('catalog_sidecar', instances=[
    {'node': n['Node'], 'kind': n['ServiceKind'], 'destination': n['ServiceProxy']['DestinationServiceName'],
     'port': n['ServicePort']} for n in proxies if n['Node'] in OTHERS])
index, healthy = c.health.service('web', passing=True)
emit('health_passing', instances=sorted(
    [{'node': h['Node']['Node'], 'id': h['Service']['ID'], 'checks': [k['Status'] for k in h['Checks']]}
     for h in healthy if h['Node']['Node'] in OTHERS], key=lambda h: h['id']), index=int(index) > 0)

# A TTL check through its life: register, pass, warn, fail, deregister. 0.7.1 sends GET for the
# last four, which Consul (1.0 on) and this agent answer 405: its method returns False and the
# check is unchanged; the same call as a PUT through c.http does it.
emit('check_register', ok=c.agent.check.register('api ready', check=consul.Check.ttl('10m'),
                                                  check_id='api-ready', service_id='api-1'),
     check=check('api-ready'))
# The service registered on the agent reaches the catalog through anti-entropy: out of passing=True
# while its TTL check is critical (or warning), in once it passes.
emit('api_health_critical', passing=api_passing(False))
for name, method, status in [('ttl_pass', c.agent.check.ttl_pass, 'pass'),
                             ('ttl_warn', c.agent.check.ttl_warn, 'warn'),
                             ('ttl_fail', c.agent.check.ttl_fail, 'fail')]:
    library = method('api-ready', notes=name)
    unchanged = check('api-ready')
    ok = put('/v1/agent/check/%s/api-ready' % status, params={'note': name})
    emit(name, library=library, unchanged=unchanged, ok=ok, check=check('api-ready'))
    emit(name + '_health', passing=api_passing(status == 'pass'))
library = c.agent.check.deregister('api-ready')
unchanged = check('api-ready')
emit('check_deregister', library=library, unchanged=unchanged,
     ok=put('/v1/agent/check/deregister/api-ready'), check=check('api-ready'))
