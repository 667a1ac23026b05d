# Debian's python3-consul (python-consul 0.7.1) administering a mesh as an operator's script does:
# ACL roles, JWT login and logout, config entries, snapshot save and restore. Each step prints one
# JSON line, {"step": ..., ...}, that test/integration/python-consul-admin.test.ts (one agent) and
# test/cluster/python-consul-admin.test.ts (through a cluster's client agent) assert, reading the
# state back through other routes between the phases.
#
# Which calls are the library's: 0.7.1 predates Consul's ACL system of 1.4 (its `acl` object is the
# legacy /v1/acl/create API that Consul 1.11 removed) and has no roles, policies, auth methods,
# binding rules, login, config entries or snapshots. Those go through its own generic HTTP client,
# c.http.get/put/post/delete with consul.base.CB callbacks (`api` below), so they pass through its
# requests session, its ?token= handling as its own methods do it and its status-to-exception
# mapping. KV reads and writes and service registration are the library's calls (kv.put, kv.get,
# agent.service.register), each with the token it is given. Snapshot save is the one exception:
# the library's response object keeps the body as decoded text, which mangles a gzip archive, so the
# archive is read through the same requests session (c.http.session) and its status mapped by CB.
#
# Usage: python-consul-admin.py PORT TOKEN PHASE [ARGS...]; TOKEN '' runs without one.
import json
import sys

import consul
from consul.base import CB, Response

PORT, TOKEN, PHASE, ARGS = int(sys.argv[1]), sys.argv[2] or None, sys.argv[3], sys.argv[4:]
c = consul.Consul(host='127.0.0.1', port=PORT, token=TOKEN)


def emit(step, **fields):
    print(json.dumps(dict(step=step, **fields), sort_keys=True), flush=True)


def params(token=None, **extra):
    """Query parameters as the library's own methods build them: this call's token, else the
    client's, as ?token=; then the rest."""
    built = {}
    token = token or c.token
    if token:
        built['token'] = token
    built.update({k: v for k, v in extra.items() if v is not None})
    return built


def api(method, path, body=None, token=None, allow_404=False, **query):
    """One call through the library's generic client: the decoded JSON answer, or its exception."""
    cb = CB.json(allow_404=allow_404)
    if method == 'get':
        return c.http.get(cb, path, params=params(token, **query))
    if method == 'delete':
        return c.http.delete(cb, path, params=params(token, **query))
    data = '' if body is None else json.dumps(body)
    send = c.http.put if method == 'put' else c.http.post
    return send(cb, path, params=params(token, **query), data=data)


def attempt(call):
    """The call's result, or the library's exception as {refused: class, text: message}."""
    try:
        return call()
    except consul.ConsulException as err:
        return {'refused': type(err).__name__, 'text': str(err)}


def names(links):
    return [link['Name'] for link in links or []]


# --- roles: a policy, a role linking it by name, a token linking the role ------------------------
if PHASE == 'roles-link':
    policy = api('put', '/v1/acl/policy', {
        'Name': 'py-app', 'Description': 'app keys', 'Rules': 'key_prefix "app/" { policy = "write" }'})
    role = api('put', '/v1/acl/role', {
        'Name': 'py-app-role', 'Description': 'from python', 'Policies': [{'Name': 'py-app'}]})
    token = api('put', '/v1/acl/token', {'Description': 'py role token', 'Roles': [{'Name': 'py-app-role'}]})
    by_name = api('get', '/v1/acl/role/name/py-app-role')
    emit('linked', policy_id=policy['ID'], role_id=role['ID'], role_policies=role['Policies'],
         by_name_id=by_name['ID'], accessor=token['AccessorID'], secret=token['SecretID'],
         token_roles=token['Roles'])
    secret = token['SecretID']
    emit('kv', allowed=c.kv.put('app/config', 'v1', token=secret),
         refused=attempt(lambda: c.kv.put('ops/config', 'v1', token=secret)),
         read=c.kv.get('app/config', token=secret)[1]['Value'].decode())

elif PHASE == 'roles-drop':
    role_id, secret = ARGS
    current = api('get', '/v1/acl/role/%s' % role_id)
    updated = api('put', '/v1/acl/role/%s' % role_id, {
        'ID': role_id, 'Name': current['Name'], 'Description': current['Description'], 'Policies': []})
    emit('updated', name=updated['Name'], policies=names(updated.get('Policies')),
         modified=updated['ModifyIndex'] > current['ModifyIndex'])
    emit('refused', write=attempt(lambda: c.kv.put('app/config', 'v2', token=secret)),
         read=attempt(lambda: c.kv.get('app/config', token=secret)))
    emit('deleted', deleted=api('delete', '/v1/acl/role/%s' % role_id),
         read=attempt(lambda: api('get', '/v1/acl/role/%s' % role_id)))

# --- login: a jwt auth method with a static public key and a binding rule ------------------------
elif PHASE == 'login-setup':
    (pem,) = ARGS
    method = api('put', '/v1/acl/auth-method', {
        'Name': 'py-jwt', 'Type': 'jwt', 'Description': 'CI jobs', 'MaxTokenTTL': '10m',
        'Config': {'JWTValidationPubKeys': [pem], 'BoundIssuer': 'https://ci.example',
                   'BoundAudiences': ['svc-agent'], 'ClaimMappings': {'service': 'service'}}})
    rule = api('put', '/v1/acl/binding-rule', {
        'AuthMethod': 'py-jwt', 'Description': 'a job runs as its service',
        'Selector': 'value.service != ""', 'BindType': 'service', 'BindName': '${value.service}'})
    rules = api('get', '/v1/acl/binding-rules', authmethod='py-jwt')
    emit('method', name=method['Name'], type=method['Type'], ttl=method['MaxTokenTTL'],
         keys=len(method['Config']['JWTValidationPubKeys']), rule_id=rule['ID'],
         listed=[r['ID'] for r in rules], bind=[rule['BindType'], rule['BindName']])

elif PHASE == 'login':
    good, wrong_audience = ARGS
    login = {'AuthMethod': 'py-jwt', 'BearerToken': good, 'Meta': {'ci': 'python'}}
    token = api('post', '/v1/acl/login', login)
    emit('login', accessor=token['AccessorID'], secret=token['SecretID'], method=token['AuthMethod'],
         local=token['Local'], identities=token['ServiceIdentities'], description=token['Description'],
         expires=isinstance(token.get('ExpirationTime'), str))
    # The user's own client for what the job does, with the login token as its default token.
    job = consul.Consul(host='127.0.0.1', port=PORT, token=token['SecretID'])
    emit('use', own=job.agent.service.register('web', service_id='py-web-1', port=8080),
         other=attempt(lambda: job.agent.service.register('db', service_id='py-db-1', port=5432)))
    emit('wrong_audience', answer=attempt(lambda: api('post', '/v1/acl/login', {
        'AuthMethod': 'py-jwt', 'BearerToken': wrong_audience})))

elif PHASE == 'logout':
    (secret,) = ARGS
    job = consul.Consul(host='127.0.0.1', port=PORT, token=secret)
    emit('logout', out=c.http.post(CB.bool(), '/v1/acl/logout', params=params(secret)),
         after=attempt(lambda: job.agent.service.register('web', service_id='py-web-2', port=8081)),
         again=attempt(lambda: c.http.post(CB.bool(), '/v1/acl/logout', params=params(secret))))

# --- config entries -------------------------------------------------------------------------------
elif PHASE == 'config':
    written = [
        api('put', '/v1/config', {'Kind': 'service-defaults', 'Name': 'py-web', 'Protocol': 'http'}),
        api('put', '/v1/config', {'Kind': 'proxy-defaults', 'Name': 'global', 'Config': {'protocol': 'http'}}),
        api('put', '/v1/config', {'Kind': 'service-intentions', 'Name': 'py-db', 'Sources': [
            {'Name': 'py-web', 'Action': 'allow'}, {'Name': '*', 'Action': 'deny'}]}),
    ]
    defaults = api('get', '/v1/config/service-defaults/py-web')
    proxy = api('get', '/v1/config/proxy-defaults/global')
    intentions = api('get', '/v1/config/service-intentions/py-db')
    emit('config', written=written, protocol=defaults['Protocol'], proxy=[proxy['Name'], proxy['Config']],
         sources=[[s['Name'], s['Action']] for s in intentions['Sources']],
         listed={kind: [e['Name'] for e in api('get', '/v1/config/%s' % kind)]
                 for kind in ('service-defaults', 'proxy-defaults', 'service-intentions')},
         missing=attempt(lambda: api('get', '/v1/config/service-defaults/py-none')))

elif PHASE == 'config-delete':
    gone = {}
    for kind, name in (('service-defaults', 'py-web'), ('service-intentions', 'py-db')):
        path = '/v1/config/%s/%s' % (kind, name)
        index = api('get', path)['ModifyIndex']
        gone[kind] = [api('delete', path, cas=index + 1000), api('get', path)['ModifyIndex'] == index,
                      api('delete', path, cas=index), attempt(lambda: api('get', path))]
    emit('deleted', gone=gone)

# --- snapshots --------------------------------------------------------------------------------
elif PHASE == 'snapshot-round':
    # FILE [SAVE_PORT]: on a cluster the archive is saved through a server (a client agent refuses),
    # while the writes and the restore go through PORT.
    file, saver = ARGS[0], consul.Consul(host='127.0.0.1', port=int((ARGS[1:] or [PORT])[0]), token=TOKEN)
    for key, value in (('snap/a', 'saved'), ('snap/b', 'kept')):
        c.kv.put(key, value)
    answer = saver.http.session.get(saver.http.uri('/v1/snapshot', params()), verify=saver.http.verify,
                                    cert=saver.http.cert)
    CB.bool()(Response(answer.status_code, answer.headers, answer.text))
    archive = answer.content
    with open(file, 'wb') as out:
        out.write(archive)
    emit('saved', size=len(archive), gzip=archive[:2] == b'\x1f\x8b', index=answer.headers['X-Consul-Index'],
         type=answer.headers['Content-Type'])
    changed = [c.kv.put('snap/a', 'changed'), c.kv.put('snap/new', 'later'), c.kv.delete('snap/b')]
    changed += [c.kv.put('snap/many/%d' % i, str(i)) for i in range(100)]
    emit('changed', all=all(changed), count=len(changed))
    emit('restored', ok=c.http.put(CB.bool(), '/v1/snapshot', params=params(), data=archive),
         values={key: (lambda entry: entry and entry['Value'].decode())(c.kv.get(key)[1])
                 for key in ('snap/a', 'snap/b', 'snap/new', 'snap/many/7')})

elif PHASE == 'snapshot-truncated':
    (file,) = ARGS
    with open(file, 'rb') as archive:
        whole = archive.read()
    emit('truncated', answer=attempt(
        lambda: c.http.put(CB.bool(), '/v1/snapshot', params=params(), data=whole[:len(whole) // 2])),
         value=c.kv.get('snap/a')[1]['Value'].decode())

else:
    sys.exit('unknown phase %s' % PHASE)
