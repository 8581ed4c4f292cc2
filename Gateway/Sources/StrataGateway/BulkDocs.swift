import Logging
import PostgresNIO

/// `POST /{db}/_bulk_docs` with `new_edits: false` (PROTOCOL.md): each revision goes into its
/// document's tree with the missing ancestors its `_revisions` names, branches are kept, the
/// winner is recomputed. One PostgreSQL transaction per request, with a constant number of
/// statements whatever the number of documents (arrays bound through `unnest`).
enum BulkDocs {
    /// A leaf or known revision of a document, as the transaction reads it.
    struct KnownRevision {
        var hasBody: Bool
        var deleted: Bool
        var channels: [String]
    }

    /// One document's state during the request: its known revisions and its leaves.
    struct DocumentState {
        var known: [RevisionID: KnownRevision] = [:]
        var leaves: Set<RevisionID> = []

        /// The winner of the leaves (PROTOCOL.md "Winner"), nil for a document with none.
        var winner: RevisionID? {
            var best: RevisionID? = nil
            for leaf in leaves {
                guard let current = best else { best = leaf; continue }
                if leaf.beats(current, selfDeleted: known[leaf]?.deleted ?? false, otherDeleted: known[current]?.deleted ?? false) {
                    best = leaf
                }
            }
            return best
        }
    }

    /// Rows to write, as parallel arrays (one element per row).
    struct RevisionRows {
        var docIDs: [String] = [], revIDs: [String] = [], generations: [Int] = [], digests: [String] = []
        var parents: [String] = [], deleted: [Bool] = [], leaf: [Bool] = [], channels: [String] = [], bodies: [String] = []

        mutating func append(docID: String, rev: RevisionID, parent: RevisionID?, deleted: Bool, leaf: Bool, channels: [String], body: String) {
            docIDs.append(docID)
            revIDs.append(rev.description)
            generations.append(rev.generation)
            digests.append(rev.digest)
            parents.append(parent?.description ?? "")
            self.deleted.append(deleted)
            self.leaf.append(leaf)
            self.channels.append(postgresArrayLiteral(channels))
            bodies.append(body)
        }
    }

    /// The per-document result, in request order.
    enum Outcome {
        case ok(id: String, rev: String)
        case failed(id: String?, rev: String?, GatewayError)
    }

    /// The most documents in one request (the replicator's largest batch).
    static let maximumDocuments = 10_000
    /// The most revisions one request may name, histories included (its transaction's work and
    /// row-lock time are bounded by it).
    static let maximumRevisions = 200_000

    static func handle(gateway: Gateway, database: String, user: GatewayUser, body: ByteBuffer) async throws -> [UInt8] {
        let request: JSON
        do {
            request = try JSONParser.parse(body.readableBytesView)
        } catch {
            throw GatewayError.badRequest("_bulk_docs body: \(error)")
        }
        guard let docs = request["docs"]?.arrayValue else {
            throw GatewayError.badRequest("_bulk_docs body must be an object with a docs array")
        }
        guard docs.count <= maximumDocuments else {
            throw GatewayError.tooLarge("_bulk_docs has \(docs.count) documents, over the limit of \(maximumDocuments) per request")
        }
        let newEdits: Bool
        switch request["new_edits"] {
        case .bool(false): newEdits = false
        case nil, .bool(true): newEdits = true
        default:
            throw GatewayError.badRequest("new_edits must be a boolean")
        }
        let outcomes = try await save(docs, newEdits: newEdits, gateway: gateway, database: database, user: user)
        return encode(outcomes, newEdits: newEdits)
    }

    /// Writes `docs` (new edits, or replicated revisions with their histories) and returns each
    /// one's outcome, in order. A new edit without `_id` gets a random one (CouchDB's `POST /{db}`).
    static func save(_ docs: [JSON], newEdits: Bool, gateway: Gateway, database: String, user: GatewayUser) async throws -> [Outcome] {
        var outcomes: [Outcome] = []
        var revisions: [(index: Int, revision: WireRevision)] = []
        for (index, original) in docs.enumerated() {
            var element = original
            if newEdits, case let .object(members) = element, element["_id"] == nil {
                element = .object([("_id", .string(randomHex(16)))] + members)
            }
            do {
                let revision = newEdits ? try WireRevision(newEdit: element) : try WireRevision(element)
                if revision.size > gateway.maxDocumentSize {
                    throw GatewayError.tooLarge("document '\(revision.docID)' revision \(revision.rev) is \(revision.size) bytes, over the limit of \(gateway.maxDocumentSize)")
                }
                revisions.append((index, revision))
                outcomes.append(.ok(id: revision.docID, rev: revision.rev.description))
            } catch let error as GatewayError {
                outcomes.append(.failed(id: element["_id"]?.stringValue, rev: element["_rev"]?.stringValue, error))
            }
        }

        let named = revisions.reduce(0) { $0 + $1.revision.history.count }
        guard named <= maximumRevisions else {
            throw GatewayError.tooLarge("_bulk_docs names \(named) revisions with their histories, over the limit of \(maximumRevisions) per request: send fewer documents per request")
        }
        if !revisions.isEmpty {
            let results = try await write(revisions.map(\.revision), gateway: gateway, database: database, user: user)
            for (k, entry) in revisions.enumerated() {
                switch results[k] {
                case let .failure(error): outcomes[entry.index] = .failed(id: entry.revision.docID, rev: entry.revision.rev.description, error)
                case let .success(rev): outcomes[entry.index] = .ok(id: entry.revision.docID, rev: rev.description)
                }
            }
        }

        return outcomes
    }

    /// The `_bulk_docs` answer: one entry per document, in order (`"ok": true` on new edits'
    /// successes, as CouchDB writes them).
    static func encode(_ outcomes: [Outcome], newEdits: Bool) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 * outcomes.count + 2)
        writer.raw("[")
        for (i, outcome) in outcomes.enumerated() {
            if i > 0 { writer.raw(",") }
            switch outcome {
            case let .ok(id, rev):
                writer.raw("{")
                if newEdits { writer.raw("\"ok\":true,") }
                writer.raw("\"id\":"); writer.string(id)
                writer.raw(",\"rev\":"); writer.string(rev); writer.raw("}")
            case let .failed(id, rev, error):
                writer.raw("{")
                if let id { writer.raw("\"id\":"); writer.string(id); writer.raw(",") }
                if let rev { writer.raw("\"rev\":"); writer.string(rev); writer.raw(",") }
                writer.raw("\"error\":"); writer.string(error.kind)
                writer.raw(",\"reason\":"); writer.string(error.reason)
                writer.raw(",\"status\":"); writer.integer(error.status); writer.raw("}")
            }
        }
        writer.raw("]")
        return writer.bytes
    }

    /// Writes the revisions in one transaction; returns each one's outcome: its revision id
    /// (made in the transaction for a new edit that creates a document over a deleted one), or
    /// its error.
    static func write(_ revisions: [WireRevision], gateway: Gateway, database: String, user: GatewayUser) async throws -> [Result<RevisionID, GatewayError>] {
        let db = user.databaseID
        let logger = gateway.logger
        return try await gateway.client.withTransaction(logger: logger) { connection in
            // The database row lock: it serialises the writers of this database (so a
            // document's tree is read and written by one transaction at a time) and orders
            // their commits in sequence order.
            var baseSeq: Int64 = 0
            for try await seq in try await connection.query("SELECT seq FROM databases WHERE id = \(db) FOR UPDATE", logger: logger).decode(Int64.self) {
                baseSeq = seq
            }

            var docIDs: [String] = []
            var seen = Set<String>()
            var candidateDocs: [String] = [], candidateRevs: [String] = []
            for revision in revisions {
                if seen.insert(revision.docID).inserted { docIDs.append(revision.docID) }
                for rev in revision.history {
                    candidateDocs.append(revision.docID)
                    candidateRevs.append(rev.description)
                }
            }

            var states: [String: DocumentState] = [:]
            let leafRows = try await connection.query(
                """
                SELECT doc_id, rev_id, deleted, channels, body IS NOT NULL FROM revisions
                WHERE db = \(db) AND doc_id = ANY(\(docIDs)::text[]) AND is_leaf
                """, logger: logger)
            for try await (docID, revText, deleted, channels, hasBody) in leafRows.decode((String, String, Bool, [String], Bool).self) {
                guard let rev = RevisionID(revText) else { continue }
                states[docID, default: DocumentState()].known[rev] = KnownRevision(hasBody: hasBody, deleted: deleted, channels: channels)
                states[docID, default: DocumentState()].leaves.insert(rev)
            }
            let knownRows = try await connection.query(
                """
                SELECT c.doc_id, c.rev_id, r.deleted, r.channels, r.body IS NOT NULL
                FROM unnest(\(candidateDocs)::text[], \(candidateRevs)::text[]) AS c(doc_id, rev_id)
                JOIN revisions r ON r.db = \(db) AND r.doc_id = c.doc_id AND r.rev_id = c.rev_id
                """, logger: logger)
            for try await (docID, revText, deleted, channels, hasBody) in knownRows.decode((String, String, Bool, [String], Bool).self) {
                guard let rev = RevisionID(revText) else { continue }
                states[docID, default: DocumentState()].known[rev] = KnownRevision(hasBody: hasBody, deleted: deleted, channels: channels)
            }

            var results: [Result<RevisionID, GatewayError>] = revisions.map { .success($0.rev) }
            var inserts = RevisionRows()
            var filled = RevisionRows()
            var noLongerLeaves: (docs: [String], revs: [String]) = ([], [])
            var changed: [String] = []
            var changedSet = Set<String>()

            for (k, given) in revisions.enumerated() {
                var state = states[given.docID] ?? DocumentState()
                var revision = given
                if revision.isNewEdit {
                    // CouchDB's rule for an edit: it names a leaf of the document, or, for a
                    // document that does not exist or whose winner is deleted, no revision.
                    if let parent = revision.newEditParent {
                        guard state.leaves.contains(parent), state.known[parent]?.hasBody == true else {
                            results[k] = .failure(.conflict("Document update conflict."))
                            continue
                        }
                    } else if let winner = state.winner, let current = state.known[winner] {
                        guard current.deleted else {
                            results[k] = .failure(.conflict("Document update conflict."))
                            continue
                        }
                        revision.rev = RevisionID(generation: winner.generation + 1, digest: revision.rev.digest)
                        revision.history = [revision.rev, winner]
                    }
                    guard revision.rev.generation <= RevisionID.maximumGeneration else {
                        results[k] = .failure(.badRequest("document '\(revision.docID)': generation over \(RevisionID.maximumGeneration)"))
                        continue
                    }
                    results[k] = .success(revision.rev)
                }
                let existing = state.known[revision.rev]
                if let existing, existing.hasBody { continue }  // already present: success, no change

                var channels = revision.channels
                let winner = state.winner
                if revision.deleted && !revision.namesChannels {
                    // A deletion naming no channel stays in the channels of what it deletes, so
                    // that the users who saw the document see it go and may delete it.
                    if revision.history.count > 1, let parent = state.known[revision.history[1]], parent.hasBody {
                        channels = parent.channels
                    } else if let winner, let current = state.known[winner] {
                        channels = current.channels
                    }
                }
                if !user.write.canWrite(channels) {
                    results[k] = .failure(.forbidden("user '\(user.name)' may not write channels \(channels) (document '\(revision.docID)')"))
                    continue
                }
                if let winner, let current = state.known[winner], !current.deleted, !user.write.canWrite(current.channels) {
                    results[k] = .failure(.forbidden("user '\(user.name)' may not write document '\(revision.docID)'"))
                    continue
                }
                // The revision it extends (the newest ancestor of its history the gateway
                // knows): writing on top of it replaces or deletes that branch, so the user
                // must be allowed to write it too, winner or not.
                if let parentRev = revision.history.dropFirst().first(where: { state.known[$0] != nil }),
                   let parent = state.known[parentRev], parent.hasBody, !user.write.canWrite(parent.channels) {
                    results[k] = .failure(.forbidden("user '\(user.name)' may not write document '\(revision.docID)' (the revision \(parentRev) it extends)"))
                    continue
                }
                let body = String(decoding: revision.body, as: UTF8.self)
                if existing != nil {
                    // Known only as an ancestor so far: it gets its body now.
                    filled.append(docID: revision.docID, rev: revision.rev, parent: nil, deleted: revision.deleted, leaf: false, channels: channels, body: body)
                    state.known[revision.rev] = KnownRevision(hasBody: true, deleted: revision.deleted, channels: channels)
                    states[revision.docID] = state
                    continue
                }
                let parent = revision.history.count > 1 ? revision.history[1] : nil
                inserts.append(docID: revision.docID, rev: revision.rev, parent: parent, deleted: revision.deleted, leaf: true, channels: channels, body: body)
                state.known[revision.rev] = KnownRevision(hasBody: true, deleted: revision.deleted, channels: channels)
                state.leaves.insert(revision.rev)
                // The missing ancestors, down to the first one already known.
                var i = 1
                while i < revision.history.count {
                    let ancestor = revision.history[i]
                    if state.known[ancestor] != nil {
                        if state.leaves.remove(ancestor) != nil {
                            noLongerLeaves.docs.append(revision.docID)
                            noLongerLeaves.revs.append(ancestor.description)
                        }
                        break
                    }
                    let grandparent = i + 1 < revision.history.count ? revision.history[i + 1] : nil
                    inserts.append(docID: revision.docID, rev: ancestor, parent: grandparent, deleted: false, leaf: false, channels: [], body: "")
                    state.known[ancestor] = KnownRevision(hasBody: false, deleted: false, channels: [])
                    i += 1
                }
                states[revision.docID] = state
                if changedSet.insert(revision.docID).inserted { changed.append(revision.docID) }
            }

            if !inserts.docIDs.isEmpty {
                try await connection.query(
                    """
                    INSERT INTO revisions (db, doc_id, rev_id, generation, digest, parent_rev, deleted, is_leaf, channels, body)
                    SELECT \(db), t.doc_id, t.rev_id, t.generation, t.digest, NULLIF(t.parent, ''), t.deleted, t.leaf,
                           t.channels::text[], NULLIF(t.body, '')
                    FROM unnest(\(inserts.docIDs)::text[], \(inserts.revIDs)::text[], \(inserts.generations)::int8[],
                                \(inserts.digests)::text[], \(inserts.parents)::text[], \(inserts.deleted)::bool[],
                                \(inserts.leaf)::bool[], \(inserts.channels)::text[], \(inserts.bodies)::text[])
                         AS t(doc_id, rev_id, generation, digest, parent, deleted, leaf, channels, body)
                    """, logger: logger)
            }
            if !filled.docIDs.isEmpty {
                try await connection.query(
                    """
                    UPDATE revisions r SET body = t.body, deleted = t.deleted, channels = t.channels::text[]
                    FROM unnest(\(filled.docIDs)::text[], \(filled.revIDs)::text[], \(filled.deleted)::bool[],
                                \(filled.channels)::text[], \(filled.bodies)::text[]) AS t(doc_id, rev_id, deleted, channels, body)
                    WHERE r.db = \(db) AND r.doc_id = t.doc_id AND r.rev_id = t.rev_id
                    """, logger: logger)
            }
            if !noLongerLeaves.docs.isEmpty {
                try await connection.query(
                    """
                    UPDATE revisions r SET is_leaf = false
                    FROM unnest(\(noLongerLeaves.docs)::text[], \(noLongerLeaves.revs)::text[]) AS t(doc_id, rev_id)
                    WHERE r.db = \(db) AND r.doc_id = t.doc_id AND r.rev_id = t.rev_id
                    """, logger: logger)
            }
            if !changed.isEmpty {
                var winners: [String] = [], deletedFlags: [Bool] = [], seqs: [Int64] = []
                for (i, docID) in changed.enumerated() {
                    let state = states[docID] ?? DocumentState()
                    let winner = state.winner
                    winners.append(winner?.description ?? "")
                    deletedFlags.append(winner.flatMap { state.known[$0]?.deleted } ?? false)
                    seqs.append(baseSeq + Int64(i) + 1)
                }
                try await connection.query(
                    """
                    INSERT INTO documents (db, doc_id, winning_rev, deleted, seq)
                    SELECT \(db), t.doc_id, t.winner, t.deleted, t.seq
                    FROM unnest(\(changed)::text[], \(winners)::text[], \(deletedFlags)::bool[], \(seqs)::int8[])
                         AS t(doc_id, winner, deleted, seq)
                    ON CONFLICT (db, doc_id) DO UPDATE
                    SET winning_rev = EXCLUDED.winning_rev, deleted = EXCLUDED.deleted, seq = EXCLUDED.seq
                    """, logger: logger)
                try await connection.query(
                    "UPDATE databases SET seq = \(baseSeq + Int64(changed.count)) WHERE id = \(db)", logger: logger)
                // Delivered to every listening gateway process when this transaction commits.
                try await connection.query("SELECT pg_notify(\(ChangeNotifier.channel), \(database))", logger: logger)
            }
            return results
        }
    }
}

/// `count` random bytes as lowercase hex (document ids of `POST /{db}`, `_uuids`).
func randomHex(_ count: Int) -> String {
    let hex = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(count * 2)
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<count {
        let byte = UInt8.random(in: 0...255, using: &generator)
        out.append(hex[Int(byte >> 4)])
        out.append(hex[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
}
