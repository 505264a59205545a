import WebSocketTransport

/// Hands one socket's transport events to its client, named as the machine knows the socket.
struct SocketReceiver: TransportReceiver {
    let client: TablecastClient
    let socket: ClientStateMachine.SocketID

    func receive(_ event: WebSocketEvent) { client.receive(event, on: socket) }
}
