/// Work handed from any thread to the service thread through the loop's locked inbox.
enum ServiceCommand: Sendable {
    case send(WebSocketMessage, WebSocketConnectionID)
    case sendMany([WebSocketMessage], [WebSocketConnectionID])
    case broadcast(WebSocketMessage)
    case close(WebSocketConnectionID, WebSocketCloseFrame)
    /// Drop a connection without a close frame (its socket shut down), as a failing network would.
    case abort(WebSocketConnectionID)
    /// Read the connection again: the application consumed enough of what it was given.
    case resumeReceiving(WebSocketConnectionID)
    /// Answer an API exchange.
    case respond(WebSocketConnectionID, HTTPAPIReply)
    /// An API exchange streams from now on.
    case stream(WebSocketConnectionID, HTTPEventStream)
    case connect(WebSocketConnectionID, WebSocketConnectRequest)
    /// Stop accepting, close every connection with the frame once its queue is flushed, then stop.
    case drain(WebSocketCloseFrame)
    /// Load the server's certificate and key again (already validated) for new connections; then call `done`.
    case reloadCertificates(ServerTLS, done: @Sendable () -> Void)
    /// Stop now: whatever is still open is torn down with the context.
    case stop
}
