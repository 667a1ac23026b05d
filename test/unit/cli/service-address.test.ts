// `-tagged-address key=host:port` is split as Consul's api.ParseServiceAddr splits it (Go's
// net.SplitHostPort, then strconv.Atoi), with Go's words for what is wrong.
import { describe, expect, it } from 'vitest';
import { parseServiceAddr } from '../../../src/cli/client/services.js';

describe('parseServiceAddr', () => {
  it('splits host and port, IPv6 in brackets', () => {
    expect(parseServiceAddr('127.0.0.1:1234')).toEqual({ Address: '127.0.0.1', Port: 1234 });
    expect(parseServiceAddr('[2001:db8::12]:1234')).toEqual({ Address: '2001:db8::12', Port: 1234 });
    expect(parseServiceAddr('web.internal:80')).toEqual({ Address: 'web.internal', Port: 80 });
    expect(parseServiceAddr(':80')).toEqual({ Address: '', Port: 80 });
  });

  it("says what is wrong in Go's words", () => {
    expect(parseServiceAddr('10.0.0.1')).toBe('address 10.0.0.1: missing port in address');
    expect(parseServiceAddr('2001:db8::12')).toBe('address 2001:db8::12: too many colons in address');
    expect(parseServiceAddr('[2001:db8::12]')).toBe('address [2001:db8::12]: missing port in address');
    expect(parseServiceAddr('[2001:db8::12:80')).toBe("address [2001:db8::12:80: missing ']' in address");
    expect(parseServiceAddr('[::1]x:80')).toBe('address [::1]x:80: missing port in address');
    expect(parseServiceAddr('a]:80')).toBe("address a]:80: unexpected ']' in address");
    expect(parseServiceAddr('10.0.0.1:http')).toBe('strconv.Atoi: parsing "http": invalid syntax');
    expect(parseServiceAddr('10.0.0.1:')).toBe('strconv.Atoi: parsing "": invalid syntax');
  });
});
