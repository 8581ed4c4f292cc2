@_spi(Layers) import StrataFormat

/// `strata-dump documents <store> [<database>]`: the document databases of a store, or one
/// database's documents or index rows.
extension DocumentInspector: CollectionInspector {
    package static let commandName = "documents"
    package static let abstract = "List the document databases of a store, or print one database's documents or index rows."
    package static let discussion = """
        Without a database: one line per database (documents, tombstones, attachments, \
        change feed) and one per index (version, state, reduction, rows). With a database: \
        its summary and its first documents in id order; with --index, that index's stored \
        rows in key order instead (map and reduce functions are the application's and do \
        not run here).
        """
    package static let usage = CollectionInspectorUsage(
        collection: .init(valueName: "database", help: "A database name: print its documents (or, with --index, index rows)."),
        limit: .init(help: "With a database: print at most N documents or rows (default \(defaultLimit)).", defaultValue: defaultLimit, minimum: 0),
        index: .init(help: "With a database: print this index's rows.", needsCollection: true))

    static let defaultLimit = 100

    package static func run(storeAt store: String, arguments: CollectionInspectorArguments, json: Bool) throws -> String {
        if let database = arguments.collection {
            let dump = try DocumentInspector.dump(database: database, ofStoreAt: store, index: arguments.index,
                                                  limit: arguments.limit ?? defaultLimit)
            return json ? try InspectionJSON.text(dump) : Self.render(dump)
        } else {
            let all = try DocumentInspector.databases(ofStoreAt: store)
            return json ? try InspectionJSON.text(all) : Self.render(all)
        }
    }

    static func render(_ all: [DocumentDatabaseSummary]) -> String {
        var out = "Document databases: \(all.count)\n"
        guard !all.isEmpty else { return out }
        var table = TextTable(["DATABASE", "ID>", "DOCUMENTS>", "TOMBSTONES>", "ATTACHMENTS>", "CHANGES>", "LAST SEQ>", "BYTES>"])
        for s in all {
            table.add([s.name, "\(s.id)", Format.count(s.documents), Format.count(s.tombstones),
                       "\(Format.count(s.attachments)) (\(Format.bytes(s.attachmentBytes)))", Format.count(s.changes),
                       "\(s.lastSequence)", Format.bytes(s.documentBytes)])
        }
        out += table.render()
        let indexes = all.flatMap { db in db.indexes.map { (db.name, $0) } }
        if !indexes.isEmpty {
            out += "\nIndexes\n"
            var t = TextTable(["DATABASE", "INDEX", "ID>", "VERSION", "STATE", "REDUCE", "ROWS>"])
            for (db, i) in indexes {
                t.add([db, i.name, "\(i.id)", i.version, i.state, i.reduction, Format.count(i.rows)])
            }
            out += t.render()
        }
        return out
    }

    static func render(_ dump: DocumentDatabaseDump) -> String {
        var out = render([dump.summary])
        if let index = dump.index {
            out += "\nRows of index \"\(index)\" (\(dump.rows.count) shown)\n"
            var t = TextTable(["KEY", "DOCUMENT", "VALUE"])
            for r in dump.rows {
                t.add([Format.clip(r.key.description, 60), r.documentID, Format.clip(r.value.map(\.description) ?? "-", 60)])
            }
            return out + t.render()
        }
        out += "\nDocuments (\(dump.documents.count) shown)\n"
        var t = TextTable(["ID", "REVISION", "KEPT>", "CONFLICTS", "STATE", "TYPE", "CHANNELS", "ATTACHMENTS", "FIELDS"])
        for d in dump.documents {
            t.add([d.id, Format.clip(d.revisionID, 14), "\(d.revisionsKept)", d.conflicts.isEmpty ? "-" : d.conflicts.map { Format.clip($0, 14) }.joined(separator: ","),
                   d.deleted ? "deleted" : "live", d.type ?? "-", d.channels.joined(separator: ","),
                   d.attachments.isEmpty ? "-" : d.attachments.joined(separator: ", "),
                   Format.clip(d.fields.map(\.description) ?? "-", 80)])
        }
        return out + t.render()
    }
}
