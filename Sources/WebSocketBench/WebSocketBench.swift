import ArgumentParser

/// `websocket-bench`: the fan-out benchmark of the WebSocket layer, and the mirror server it measures.
@main
struct WebSocketBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "websocket-bench",
        abstract: "Fan-out benchmark: 1 publisher, N subscribers, our layer vs libwebsockets' C mirror server.",
        subcommands: [RunCommand.self, VersusCommand.self, MirrorServerCommand.self, InboundCommand.self],
        defaultSubcommand: RunCommand.self)
}
