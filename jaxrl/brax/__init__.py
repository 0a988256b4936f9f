"""Brax's and MuJoCo Playground's side of jaxrl (issue 71): Brax's trainer signatures over
jaxrl's loops, and Brax's parameter, normaliser and checkpoint layouts (`jaxrl.brax.params`)."""
