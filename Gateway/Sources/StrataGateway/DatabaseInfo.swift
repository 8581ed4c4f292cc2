import Logging
import PostgresNIO

extension Databases {
    /// `GET /{db}` (CouchDB 3's database information): `update_seq` (a number here), and
    /// `doc_count`/`doc_del_count` counting the documents whose winning revision the user may
    /// read, so that the counts tell nothing of the rest.
    static func info(_ name: String, user: GatewayUser, gateway: Gateway) async throws -> [UInt8] {
        let db = user.databaseID
        let (all, channels) = user.read.sqlParameters
        var seq: Int64 = 0, live: Int64 = 0, deleted: Int64 = 0
        let rows = try await gateway.client.query(
            """
            SELECT (SELECT seq FROM databases WHERE id = \(db)),
                   count(*) FILTER (WHERE NOT d.deleted), count(*) FILTER (WHERE d.deleted)
            FROM documents d JOIN revisions r ON r.db = d.db AND r.doc_id = d.doc_id AND r.rev_id = d.winning_rev
            WHERE d.db = \(db) AND (\(all) OR r.channels && \(channels)::text[])
            """, logger: gateway.logger)
        for try await (s, l, d) in rows.decode((Int64?, Int64, Int64).self) {
            seq = s ?? 0
            live = l
            deleted = d
        }
        var writer = JSONWriter()
        writer.raw("{\"db_name\":"); writer.string(name)
        writer.raw(",\"update_seq\":"); writer.integer(seq)
        writer.raw(",\"doc_count\":"); writer.integer(live)
        writer.raw(",\"doc_del_count\":"); writer.integer(deleted)
        writer.raw(",\"purge_seq\":0,\"compact_running\":false,\"disk_format_version\":8,\"instance_start_time\":\"0\"")
        writer.raw(",\"sizes\":{\"file\":0,\"external\":0,\"active\":0},\"props\":{}}")
        return writer.bytes
    }
}
