// The client's public API takes and returns the model's, the protocol's and the transport's types (`RowPath`,
// `JSONValue`, `ServerMessage.Ack`, `ProtocolError`, `WebSocketClient.Configuration`, …): they are re-exported, so
// that `import TablecastClient` is all a user of the library writes (the README's example is type-checked with that
// one import by Tests/BlackBox/test_readme.py).
@_exported import TableModel
@_exported import TablecastProtocol
@_exported import WebSocketTransport
