@_spi(Layers) import StrataEngine

/// A collection kind's view in `strata-dump`: the subcommand that lists a store's collections of
/// the kind (or prints one of them), read from the store's files without opening it.
///
/// Each kind conforms in its own folder (`SeriesInspector+Dump.swift`, …) and is registered once,
/// in ``StoreCollections/inspectors`` (from each kind's ``CollectionModule/inspector``); `strata-dump` builds one subcommand per registered kind from
/// the ``usage`` declared here, so adding a kind needs no edit in the tool.
package protocol CollectionInspector: SendableMetatype {
    /// The subcommand's name: `strata-dump <commandName> <store> …`.
    static var commandName: String { get }
    /// One line for the tool's list of subcommands.
    static var abstract: String { get }
    /// The longer text of the subcommand's help.
    static var discussion: String { get }
    /// The arguments the subcommand takes besides the store directory and `--json`.
    static var usage: CollectionInspectorUsage { get }

    /// What the subcommand prints for the store in `directory`: tables, or with `json` the
    /// pretty-printed JSON (ending in a newline). `arguments` are those of ``usage``, checked
    /// and with their defaults applied (``validated(_:)``). Errors are the inspector's own
    /// (`StrataError`, `InspectionError`); the tool turns them into its exit status.
    static func run(storeAt directory: String, arguments: CollectionInspectorArguments, json: Bool) throws -> String

    /// What `strata-dump verify` finds wrong in the kind's records of `snapshot`, checked as the
    /// library checks them where it reads them; each finding names its collection and record.
    /// A kind without such checks has none (the default).
    static func findings(in snapshot: Snapshot) throws -> [String]
}

extension CollectionInspector {
    package static func findings(in snapshot: Snapshot) throws -> [String] { [] }
}

/// The arguments a ``CollectionInspector``'s subcommand accepts, with their help texts. An
/// argument that is nil here is not accepted: the tool hides it and rejects it.
package struct CollectionInspectorUsage: Sendable {
    /// The optional positional argument after the store that names one collection.
    package struct Collection: Sendable {
        /// The argument's name in the help (`path` shows as `<path>`).
        package var valueName: String
        /// Its help text.
        package var help: String
    }

    /// `--limit N`.
    package struct Limit: Sendable {
        /// Its help text.
        package var help: String
        /// The limit when none is given; nil: none.
        package var defaultValue: Int?
        /// The smallest limit accepted (0 or 1); a smaller one is a usage error.
        package var minimum: Int
    }

    /// `--index I`.
    package struct Index: Sendable {
        /// Its help text.
        package var help: String
        /// Whether it needs the collection argument (a usage error without it).
        package var needsCollection: Bool
    }

    /// The collection argument, if the subcommand takes one.
    package var collection: Collection?
    /// `--limit`, if accepted.
    package var limit: Limit?
    /// `--index`, if accepted.
    package var index: Index?
    /// The help text of `--principal`, if accepted.
    package var principal: String?

    /// A usage; what is not given is not accepted.
    package init(collection: Collection? = nil, limit: Limit? = nil, index: Index? = nil, principal: String? = nil) {
        self.collection = collection
        self.limit = limit
        self.index = index
        self.principal = principal
    }
}

/// The arguments given to a ``CollectionInspector``'s subcommand, besides the store and `--json`.
package struct CollectionInspectorArguments: Sendable, Equatable {
    /// The collection argument (a series path, a channel name, a database name).
    package var collection: String?
    /// `--limit`.
    package var limit: Int?
    /// `--index`.
    package var index: String?
    /// `--principal`.
    package var principal: String?

    /// Arguments; what is nil was not given.
    package init(collection: String? = nil, limit: Int? = nil, index: String? = nil, principal: String? = nil) {
        self.collection = collection
        self.limit = limit
        self.index = index
        self.principal = principal
    }
}

/// Arguments a ``CollectionInspector`` does not accept, or accepts with other values: the tool
/// prints the message with its usage and exits 2.
package struct CollectionInspectorUsageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, as ArgumentParser words its own errors (`--limit must be at least 1`).
    package var message: String

    package var description: String { message }
}

extension CollectionInspector {
    /// `arguments` checked against ``usage`` and with their defaults applied, as ``run(storeAt:arguments:json:)``
    /// takes them.
    ///
    /// - Throws: ``CollectionInspectorUsageError`` for an argument the kind does not accept, a
    ///   limit below its minimum, or an index without the collection it needs.
    package static func validated(_ arguments: CollectionInspectorArguments) throws -> CollectionInspectorArguments {
        let usage = self.usage
        func reject(_ message: String) -> CollectionInspectorUsageError { CollectionInspectorUsageError(message: message) }
        if let collection = arguments.collection, usage.collection == nil { throw reject("Unexpected argument '\(collection)'") }
        if arguments.index != nil && usage.index == nil { throw reject("Unknown option '--index'") }
        if arguments.principal != nil && usage.principal == nil { throw reject("Unknown option '--principal'") }
        var checked = arguments
        if let limit = usage.limit {
            checked.limit = arguments.limit ?? limit.defaultValue
            if let given = checked.limit, given < limit.minimum {
                throw reject(limit.minimum == 0 ? "--limit must not be negative" : "--limit must be at least \(limit.minimum)")
            }
        } else if arguments.limit != nil {
            throw reject("Unknown option '--limit'")
        }
        if let index = usage.index, index.needsCollection, arguments.index != nil, arguments.collection == nil {
            throw reject("--index needs a \(usage.collection?.valueName ?? "collection")")
        }
        return checked
    }
}
