"""Policies out of jaxrl: ONNX models of jaxrl runs, policy files and Brax checkpoints
(`jaxrl export`, `Policy.export_onnx`; docs/EXPORT.md)."""
