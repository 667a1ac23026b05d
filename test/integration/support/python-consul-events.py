# Debian's python3-consul (python-consul 0.7.1) firing a user event through one agent and following
# each of the others' event lists with its blocking list(index=, wait=), as a deploy hook's script
# would. Prints one JSON line per agent, {"port": ..., "id": ..., "payload": ...}, that
# test/cluster/consul-clients.test.ts asserts. Arguments: the firing agent's port, then the ports to follow.
import json
import sys

import consul

fire_port, follow_ports = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]
fired = consul.Consul(host='127.0.0.1', port=fire_port).event.fire('py-deploy', 'build 42', node='.*')
for port in follow_ports:
    c = consul.Consul(host='127.0.0.1', port=port)
    index, events = c.event.list(name='py-deploy')
    while not any(e['ID'] == fired['ID'] for e in events):
        index, events = c.event.list(name='py-deploy', index=index, wait='5s')
    event = next(e for e in events if e['ID'] == fired['ID'])
    payload = event['Payload'].decode()  # the library decodes the base64 itself (decode='Payload')
    print(json.dumps({'port': port, 'id': event['ID'], 'fired': fired['ID'], 'payload': payload,
                      'node': event['NodeFilter']}, sort_keys=True), flush=True)
