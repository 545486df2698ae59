"""What several capabilities of stepfork.analysis use (private): ``atomic`` (the one atomic text write of
exported tests, receipts and views), ``render`` (the text and HTML rendering helpers of result objects) and
``expectation`` (reading an ``--expect-output`` file). Nothing here imports a capability."""
