import Foundation
import PackagePlugin

/// Embeds the browser page (`web-client-protocol/client`, its top-level files: the tests in its folders are not
/// served) into the target as `EmbeddedPage.files`, so the executable serves it from any working directory.
@main
struct EmbedPage: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let page = context.package.directoryURL.appending(path: "web-client-protocol/client")
        let files = try FileManager.default.contentsOfDirectory(
            at: page, includingPropertiesForKeys: [.isRegularFileKey]
        )
        .filter { try $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true }
        .sorted { $0.lastPathComponent < $1.lastPathComponent }
        // The HTTP API's document, served at /v1/openapi.yaml.
        let document = context.package.directoryURL.appending(path: "web-client-protocol/openapi.yaml")
        let embedded = files + [document]
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedPage.swift")
        return [
            .buildCommand(
                displayName: "Embedding the page (\(files.count) files) and the HTTP API's document",
                executable: try context.tool(named: "PageEmbedder").url,
                arguments: [output.path] + embedded.map(\.path),
                inputFiles: embedded, outputFiles: [output])
        ]
    }
}
