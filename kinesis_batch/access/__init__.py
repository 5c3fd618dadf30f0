"""What a deployment touches in AWS, and the least-privilege policies of each of its principals."""
