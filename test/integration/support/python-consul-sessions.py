# Debian's python3-consul (python-consul 0.7.1) taking a lock as a user's script does: sessions,
# KV acquire and release, renew, destroy with Behavior delete. Each step prints one JSON line,
# {"step": ..., ...}, that test/integration/sessions.test.ts (one agent) and
# test/cluster/sessions.test.ts (through a cluster's client agent) assert.
import json
import sys

import consul

c = consul.Consul(host='127.0.0.1', port=int(sys.argv[1]))


def emit(step, **fields):
    print(json.dumps(dict(step=step, **fields), sort_keys=True), flush=True)


a = c.session.create(name='py-a', ttl=10, lock_delay=0)
b = c.session.create(name='py-b', lock_delay=0)
emit('create', distinct=a != b, ttl=c.session.info(a)[1]['TTL'], lockdelay=c.session.info(a)[1]['LockDelay'])

emit('acquire', a=c.kv.put('py/leader', 'a', acquire=a), b=c.kv.put('py/leader', 'b', acquire=b))
_, entry = c.kv.get('py/leader')
emit('held', session=entry.get('Session') == a, lockindex=entry['LockIndex'], value=entry['Value'].decode())

renewed = c.session.renew(a)
try:
    c.session.renew('00000000-0000-0000-0000-000000000000')
    missing = 'renewed'
except consul.NotFound:
    missing = 'NotFound'
emit('renew', id=renewed['ID'] == a, missing=missing)

emit('release', b=c.kv.put('py/leader', 'x', release=b), a=c.kv.put('py/leader', 'a2', release=a))
emit('handover', b=c.kv.put('py/leader', 'b', acquire=b))
c.session.destroy(b)
_, entry = c.kv.get('py/leader')
emit('destroyed', session=entry.get('Session'), lockindex=entry['LockIndex'])

d = c.session.create(name='py-ephemeral', behavior='delete', lock_delay=0)
c.kv.put('py/ephemeral', 'here', acquire=d)
c.session.destroy(d)
emit('ephemeral', entry=c.kv.get('py/ephemeral')[1])

_, listed = c.session.list()
_, on_node = c.session.node(c.agent.self()['Config']['NodeName'])
emit('list', names=sorted(s['Name'] for s in listed), node=sorted(s['Name'] for s in on_node))
c.session.destroy(a)
