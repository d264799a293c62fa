"""The walkthrough's steps, one module per capability each shows; ``walkthrough.STEPS``
puts them in order."""
