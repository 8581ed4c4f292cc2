import ArgumentParser
import Strata

/// `strata-dump <kind> <store> …` for the collection kind `Inspector`: its name, help and
/// arguments come from the inspector's ``CollectionInspector/usage``. Every command declares
/// the same arguments; those the kind does not accept are left out of its help and usage and
/// rejected by `validate()`, as the parser rejects an unknown option.
struct CollectionCommand<Inspector: CollectionInspector>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Inspector.commandName, abstract: Inspector.abstract, discussion: Inspector.discussion)
    }

    @Argument(help: "The store directory.")
    var store: String

    @Argument(help: accepted(Inspector.usage.collection?.help, valueName: Inspector.usage.collection?.valueName))
    var collection: String?

    @Option(help: accepted(Inspector.usage.index?.help))
    var index: String?

    // The kind's default limit is applied by `validated`; its help says what ArgumentParser
    // appends to the help of an option with a default value. (An `@Option` with an initial value
    // does not compile in a generic command: "property '_limit' not initialized by init accessor".)
    @Option(help: accepted(Inspector.usage.limit.map { limit in
        limit.help + (limit.defaultValue.map { " (default: \($0))" } ?? "")
    }))
    var limit: Int?

    @Option(help: accepted(Inspector.usage.principal))
    var principal: String?

    @OptionGroup var output: OutputOptions

    private var given: CollectionInspectorArguments {
        CollectionInspectorArguments(collection: collection, limit: limit, index: index, principal: principal)
    }

    func validate() throws {
        do {
            _ = try Inspector.validated(given)
        } catch let error as CollectionInspectorUsageError {
            throw ValidationError(error.message)
        }
    }

    func run() throws {
        print(try output.withKey { try Inspector.run(storeAt: store, arguments: try Inspector.validated(given), json: output.json) },
              terminator: "")
    }
}

/// The help of an argument a kind accepts (`help` not nil), or of one it does not: hidden.
private func accepted(_ help: String?, valueName: String? = nil) -> ArgumentHelp {
    ArgumentHelp(help ?? "", valueName: valueName, visibility: help == nil ? .private : .default)
}

extension CollectionInspector {
    /// The kind's subcommand.
    static var command: any ParsableCommand.Type { CollectionCommand<Self>.self }
}
