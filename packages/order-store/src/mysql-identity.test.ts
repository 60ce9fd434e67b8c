import { describe, expect, it } from 'vitest';
import { judgeMysqlServer } from './mysql-identity.ts';

const galera = (cluster: string, seqno: number) => `wsrep_cluster_state_uuid=${cluster},wsrep_last_committed=${seqno}`;

describe('judging the MySQL reached against the one last seen', () => {
  it('sees one server as itself and another server_id as a change', () => {
    expect(judgeMysqlServer('server_id=1', 'server_id=1')).toBe('same');
    expect(judgeMysqlServer('server_id=1', 'server_id=2')).toBe('changed');
    expect(judgeMysqlServer('server_id=1,server_uuid=a', 'server_id=1,server_uuid=b')).toBe('changed');
  });

  it('sees one Galera cluster that went on (from any node) as the same MySQL', () => {
    expect(judgeMysqlServer(galera('c1', 100), galera('c1', 100))).toBe('same');
    expect(judgeMysqlServer(galera('c1', 100), galera('c1', 250))).toBe('same');
  });

  it('sees the cluster with fewer commits than were seen (bootstrapped again from a node behind) as a change', () => {
    expect(judgeMysqlServer(galera('c1', 100), galera('c1', 99))).toBe('changed');
  });

  it('sees another cluster, or a move between one server and a cluster, as a change', () => {
    expect(judgeMysqlServer(galera('c1', 100), galera('c2', 500))).toBe('changed');
    expect(judgeMysqlServer('server_id=1', galera('c1', 1))).toBe('changed');
    expect(judgeMysqlServer(galera('c1', 1), 'server_id=1')).toBe('changed');
  });
});
