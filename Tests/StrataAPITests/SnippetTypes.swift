import Foundation

/// The message type of the documents' channel examples, for the generated snippets that take a
/// `Channel<ChatMessage>` (`<!-- snippet: given lobby: Channel<ChatMessage> -->`); the snippet
/// that declares it declares its own, the same.
struct ChatMessage: Codable, Sendable {
    var user: String
    var text: String
}
